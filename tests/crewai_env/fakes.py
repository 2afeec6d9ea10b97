"""A scripted LLM and a deterministic embedder, so a crew runs with memory
on and no network: CrewAI's own ``BaseLLM`` and custom-embedder seams."""

from __future__ import annotations

from typing import Any

import numpy as np
from agentsensus import embedders
from chromadb.api.types import EmbeddingFunction
from crewai.llms.base_llm import BaseLLM
from crewai.memory.analyze import ConsolidationPlan, ExtractedMemories, MemoryAnalysis, QueryAnalysis
from crewai.rag.embeddings.providers.custom.embedding_callable import CustomEmbeddingFunction


class ScriptedLLM(BaseLLM):
    """Answers an agent's task with ``answer`` and CrewAI's memory prompts
    with fixed structured outputs: the memories extracted are ``facts``,
    saved at scope ``/launch``, and consolidation is ``plan`` (default:
    insert the new memory, touch nothing)."""

    facts: list[str] = []
    answer: str = "done"
    plan: Any = None
    calls: int = 0

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self.calls += 1
        if response_model is ExtractedMemories:
            return ExtractedMemories(memories=list(self.facts))
        if response_model is MemoryAnalysis:
            return MemoryAnalysis(suggested_scope="/launch", categories=["schedule"], importance=0.7)
        if response_model is ConsolidationPlan:
            return self.plan if self.plan is not None else ConsolidationPlan(actions=[], insert_new=True)
        if response_model is QueryAnalysis:
            return QueryAnalysis(complexity="simple", recall_queries=["launch date"])
        return f"Thought: I now know the final answer\nFinal Answer: {self.answer}"

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192


class HashEmbedding(CustomEmbeddingFunction, EmbeddingFunction):  # type: ignore[misc]
    """agentsensus' hash embedder (384 dims, no model, no network) as a
    CrewAI custom embedding function."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, input: Any) -> Any:
        return [np.asarray(v, dtype=np.float32) for v in embedders.hash(list(input))]


EMBEDDER = {"provider": "custom", "config": {"embedding_callable": HashEmbedding}}
