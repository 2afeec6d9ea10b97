"""Judges named by a spec string, so that a saved config can name the judge
its store ran with and a reloaded one runs the same.

A spec is ``"exact"``, ``"never"``, ``"threshold:0.8"`` or
``"llm:MODEL"`` / ``"llm:MODEL@URL"`` (an OpenAI-compatible endpoint; the
API key is never saved, a reloaded judge reads ``OPENAI_API_KEY``). A judge
that no spec names (a custom function, an LLM judge with non-default
options) has no spec: `judge_spec` says so in a ``ValueError``.
"""

from __future__ import annotations

import re
from typing import Any

from .. import judges

__all__ = ["judge_spec", "judge_from_spec"]

# judges.threshold names the function it makes "threshold(X)" (judges.py).
_THRESHOLD = re.compile(r"threshold\((?P<x>[^()]+)\)")

# An LLM judge's spec holds model and endpoint only: every other option must
# be at the default that judges.llm gives, or the reloaded judge would differ.
_LLM_DEFAULTS: dict[str, Any] = {
    "answer_retries": 2,
    "on_error": "no_match",
    "json_mode": True,
    "max_tokens": None,
    "judge_budget": 24_000,  # llm.judge.DEFAULT_BUDGET, not imported: that would load the LLM code
}
_CLIENT_DEFAULTS: dict[str, Any] = {
    "timeout": 60.0,
    "retries": 3,
    "temperature": 0.0,
    "max_tokens": None,
    "options": {},
}


def judge_spec(judge: Any) -> str:
    """The spec naming ``judge``, or ``ValueError`` saying why it has none."""
    if judge is judges.exact:
        return "exact"
    if judge is judges.never:
        return "never"
    if getattr(judge, "__module__", None) == judges.__name__ and getattr(judge, "__qualname__", "") == (
        "threshold.<locals>.judge"
    ):
        m = _THRESHOLD.fullmatch(getattr(judge, "__name__", ""))
        if m:
            return f"threshold:{float(m.group('x'))!r}"
    from ..llm.judge import LLMJudge  # imports no openai until a client is made

    if isinstance(judge, LLMJudge):
        changed = [k for k, v in _LLM_DEFAULTS.items() if getattr(judge, k, v) != v]
        client = judge.client
        changed += [f"client.{k}" for k, v in _CLIENT_DEFAULTS.items() if getattr(client, k, v) != v]
        if changed:
            raise ValueError(f"the LLM judge has options a spec cannot name ({', '.join(changed)}): it cannot be saved")
        url = client.base_url
        return f"llm:{client.model}" + (f"@{url}" if url else "")
    name = getattr(judge, "__name__", type(judge).__name__)
    raise ValueError(
        f"the judge {name!r} has no spec ('exact', 'never', 'threshold:X', 'llm:MODEL@URL'): it cannot be saved"
    )


def judge_from_spec(spec: str) -> judges.Judge:
    """The judge a spec names; ``ValueError`` for a malformed spec."""
    if not isinstance(spec, str):
        raise TypeError(f"a judge spec is a str, got {type(spec).__name__}")
    if spec == "exact":
        return judges.exact
    if spec == "never":
        return judges.never
    kind, _, arg = spec.partition(":")
    if kind == "threshold" and arg:
        try:
            x = float(arg)
        except ValueError:
            raise ValueError(f"threshold spec needs a number: 'threshold:0.8', got {spec!r}") from None
        return judges.threshold(x)
    if kind == "llm" and arg:
        model, at, url = arg.rpartition("@")
        if not at or "://" not in url:
            model, url = arg, ""
        judge: judges.Judge = judges.llm(model, base_url=url or None)
        return judge
    raise ValueError(f"unknown judge spec {spec!r}: use 'exact', 'never', 'threshold:X' or 'llm:MODEL@URL'")
