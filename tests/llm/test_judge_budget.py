"""The LLM judge within a token budget: a big batch is split, a prompt the
endpoint refuses as too large is halved, a huge request is trimmed; the
verdicts stay those of the unsplit prompt (the fake server's toy model is
deterministic)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from agentsensus import JudgeRequest, Memory, judges
from agentsensus.llm.client import too_large
from agentsensus.llm.judge import LLMJudge
from fake_openai import FakeOpenAI


def make_judge(fake: FakeOpenAI, **kw: Any) -> LLMJudge:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("cache_size", 0)  # every call asks the model
    return judges.llm("fake-model", base_url=fake.url, **kw)


def batch(n: int = 60) -> list[JudgeRequest]:
    """``n`` requests, every third with a candidate stating its fact in other words."""
    out = []
    for i in range(n):
        statement = f"In round {i}, the ghost of the king walks on platform number {i}"
        cands = [
            Memory(
                1000 + i, f"Platform number {i + 1}: the queen weeps for the king in round {i}", frozenset({"A"}), 0
            ),
            Memory(2000 + i, f"Horatio doubts the tale of the ghost, round {i}", frozenset({"B", "C"}), 0),
        ]
        if i % 3 == 0:
            cands.append(
                Memory(
                    3000 + i, f"On platform number {i} in round {i}, the ghost of the king walks", frozenset({"A"}), 0
                )
            )
        out.append(JudgeRequest(statement, "Hamlet", cands))
    return out


def prompt_chars(body: dict[str, Any]) -> int:
    return sum(len(m["content"]) for m in body["messages"])


def test_a_batch_over_the_budget_is_split_into_calls_within_it(fake: FakeOpenAI) -> None:
    reqs = batch()
    whole = make_judge(fake)(reqs)
    assert len(fake.log()) == 1 and prompt_chars(fake.log()[0]) > 3 * 2000
    assert sum(v is not None for v in whole) == 20  # the toy model found every restated fact
    fake.reset()
    j = make_judge(fake, judge_budget=2000)
    assert j(reqs) == whole
    bodies = fake.log()
    assert len(bodies) > 1 and len(bodies) == j.stats.prompts
    assert all(prompt_chars(b) / 3 <= 2000 for b in bodies)
    # Every request was asked exactly once, in order.
    asked = [r["statement"] for b in bodies for r in json.loads(b["messages"][-1]["content"])["requests"]]
    assert asked == [r.statement for r in reqs]


def test_a_prompt_refused_as_too_large_is_halved_until_it_passes(fake: FakeOpenAI) -> None:
    reqs = batch()
    whole = make_judge(fake)(reqs)
    fake.reset()
    fake.faults(max_prompt_chars=5000)  # a 400 "maximum context length" above 5,000 characters
    j = make_judge(fake)  # the default budget: far above what this endpoint takes
    assert j(reqs) == whole
    assert j.stats.splits > 0 and j.stats.failures == 0 and j.stats.fallbacks == 0
    u = j.client.usage
    assert u.errors == j.stats.splits and u.calls == j.stats.prompts  # a refusal is not retried as such
    answered = [b for b in fake.log() if prompt_chars(b) <= 5000]
    assert len(answered) == u.calls - u.errors


def test_a_request_refused_even_alone_falls_back_to_no_match(fake: FakeOpenAI) -> None:
    fake.faults(max_prompt_chars=100)  # refuses everything
    j = make_judge(fake)
    assert j(batch(4)) == [None] * 4
    assert (j.stats.splits, j.stats.failures, j.stats.fallbacks) == (3, 4, 4)
    assert j.client.usage.calls == 7  # 4 + 2 + 1 prompts: bounded, never a crash


def test_a_single_request_over_the_budget_is_sent_alone_trimmed(fake: FakeOpenAI) -> None:
    statement = "The ghost walks on the platform at midnight"
    same = Memory(7, "At midnight the ghost walks on the platform", frozenset({"Horatio"}), 0)
    filler = [Memory(100 + i, "a long unrelated record " * 40, frozenset({"X"}), 0) for i in range(30)]
    j = make_judge(fake, judge_budget=1200)
    assert j([JudgeRequest(statement, "Hamlet", [same, *filler])]) == [7]  # the best candidate is kept
    (body,) = fake.log()
    assert prompt_chars(body) / 3 <= 1200 and j.stats.truncated == 1
    # A statement longer than the whole budget is shortened, not sent whole, and never crashes.
    huge = JudgeRequest("the ghost " * 2000, "Hamlet", [Memory(9, "the ghost " * 2000, frozenset({"A"}), 0)])
    assert j([huge]) in ([None], [9])
    assert all(prompt_chars(b) / 3 <= 1200 for b in fake.log()) and j.stats.truncated == 2


def test_malformed_answers_and_refusals_never_merge_and_are_counted(fake: FakeOpenAI) -> None:
    fake.faults(malformed_rate=0.4, refusal_rate=0.3, seed=5)
    j = make_judge(fake, judge_budget=1500)
    verdicts = j(batch(30))
    whole = [3000 + i if i % 3 == 0 else None for i in range(30)]
    # Each verdict is the right one or, where no valid answer came, no match: never a wrong merge.
    assert all(v is None or v == w for v, w in zip(verdicts, whole))
    assert j.stats.malformed > 0 and len(fake.log()) == j.stats.prompts
    assert any(v is not None for v in verdicts)


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.", True),
        (400, "the request exceeds the available context size, try increasing it", True),
        (400, "prompt is too long: 210000 tokens > 200000 maximum", True),
        (413, "Payload Too Large", True),
        (400, "Invalid value for 'temperature'", False),
        (404, "The model `m` does not exist (maximum context length unknown)", False),
    ],
)
def test_too_large_tells_a_context_refusal_from_other_errors(status: int, message: str, expected: bool) -> None:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    exc = openai.APIStatusError(message, response=httpx.Response(status, request=request), body=None)
    assert too_large(exc) is expected


def test_another_bad_request_is_not_split_and_falls_back(fake: FakeOpenAI) -> None:
    fake.script({"status": 400})  # "scripted failure": not about the prompt's size
    j = make_judge(fake)
    assert j(batch(6)) == [None] * 6
    assert (j.stats.splits, j.stats.failures, j.stats.fallbacks, j.client.usage.calls) == (0, 1, 6, 1)
