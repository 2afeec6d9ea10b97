"""Moved to `agentsensus.llm.client`; this path re-exports it."""

from __future__ import annotations

from .llm.client import LLMClient, LLMError, Reply, Usage, endpoint_error, too_large

__all__ = ["LLMClient", "Reply", "Usage", "LLMError", "endpoint_error", "too_large"]
