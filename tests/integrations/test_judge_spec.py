"""Judge specs: the names saved configs give the store's judge."""

from __future__ import annotations

import pytest
from agentsensus import judges
from agentsensus.integrations.judge_spec import judge_from_spec, judge_spec
from hypothesis import given
from hypothesis import strategies as st


@given(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False))
def test_a_threshold_judge_round_trips_through_its_spec(x: float) -> None:
    spec = judge_spec(judges.threshold(x))
    assert spec == f"threshold:{x!r}"
    again = judge_from_spec(spec)
    assert judge_spec(again) == spec and float(spec.split(":")[1]) == x


def test_named_judges_and_llm_endpoints() -> None:
    assert judge_from_spec("exact") is judges.exact and judge_from_spec("never") is judges.never
    for spec in ["llm:qwen2.5@http://127.0.0.1:8080/v1", "llm:gpt-4o-mini"]:
        judge = judge_from_spec(spec)
        assert judge_spec(judge) == spec
    with_at = judge_from_spec("llm:model@v2")  # an @ that starts no URL is part of the model name
    assert judge_spec(with_at) == "llm:model@v2"


@pytest.mark.parametrize("spec", ["", "threshold", "threshold:high", "llm:", "regex:.*", "EXACT"])
def test_malformed_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        judge_from_spec(spec)


def test_judges_without_a_spec_say_why() -> None:
    with pytest.raises(ValueError, match="'_mine' has no spec"):
        judge_spec(_mine)
    with pytest.raises(ValueError, match="client.temperature"):
        judge_spec(judges.llm("m", "http://127.0.0.1:9/v1", temperature=0.7))
    with pytest.raises(ValueError, match="judge_budget"):
        judge_spec(judges.llm("m", "http://127.0.0.1:9/v1", judge_budget=4000))


def _mine(requests: list[judges.JudgeRequest]) -> list[None]:
    return [None] * len(requests)
