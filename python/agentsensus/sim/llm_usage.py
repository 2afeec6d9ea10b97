"""``llm_usage``: what a run's model cost and how often it failed, for ``metrics.json``'s ``llm`` object.

The LLM policy factory (`LLMPolicies`) and the LLM judge
(`LLMJudge`) keep counters (``counters()``);
this sums them. ``calls``: HTTP requests to the endpoint, retries included;
``errors``: those that failed (a 503 retried, a prompt refused as too large,
a timeout...); ``malformed``: answers that were no usable action or no valid
set of verdicts (a refusal, broken JSON); ``fallbacks``: decisions that
became ``observe`` and judge requests answered "no match" because no usable
answer came; ``prompt_tokens`` and ``completion_tokens`` as the endpoint
reported them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["llm_usage", "KEYS"]

#: The counters of ``metrics.json``'s ``llm`` object, in the totals and in each part.
KEYS = ("calls", "errors", "malformed", "fallbacks", "prompt_tokens", "completion_tokens")


def _part(counters: dict[str, Any]) -> dict[str, int]:
    return {k: int(counters.get(k) or 0) for k in KEYS}


def llm_usage(policy: Any, judge: Any) -> dict[str, Any] | None:
    """The ``llm`` object of a run whose ``policy`` (factory) or ``judge`` keep
    model counters (a ``counters()`` method): the totals, and one part per
    object (``{"policy": {...}, "judge": {...}}``); ``None`` when neither
    talks to a model."""
    parts: dict[str, dict[str, int]] = {}
    for name, obj in (("policy", policy), ("judge", judge)):
        counters = getattr(obj, "counters", None)
        if callable(counters):
            parts[name] = _part(counters())
    if not parts:
        return None
    out: dict[str, Any] = {k: sum(p[k] for p in parts.values()) for k in KEYS}
    out.update(parts)
    return out
