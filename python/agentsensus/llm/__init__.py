"""Everything that talks to a language model over an OpenAI-compatible API
(the ``llm`` extra): the client with its retries and counters
(`client`), the equivalence judge (`judge`) and the embedder
(`embedder`). Importing it imports no ``openai``: the client loads it
when a client is made."""

from __future__ import annotations

from .client import LLMClient, LLMError, Reply, Usage
from .embedder import OpenAIEmbedder
from .judge import JudgeStats, LLMJudge, MalformedAnswer

__all__ = ["LLMClient", "LLMError", "Reply", "Usage", "LLMJudge", "JudgeStats", "MalformedAnswer", "OpenAIEmbedder"]
