"""Moved to `agentsensus.llm.judge`; this path re-exports it."""

from __future__ import annotations

from .llm.judge import (
    DEFAULT_BUDGET,
    SYSTEM_PROMPT,
    JudgeStats,
    LLMJudge,
    MalformedAnswer,
    build_messages,
    estimate_tokens,
    llm,
    parse_verdicts,
)

__all__ = [
    "LLMJudge",
    "JudgeStats",
    "MalformedAnswer",
    "llm",
    "build_messages",
    "parse_verdicts",
    "SYSTEM_PROMPT",
    "estimate_tokens",
    "DEFAULT_BUDGET",
]
