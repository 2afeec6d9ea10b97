"""The LLM judge against a fake OpenAI-compatible server (a real HTTP process)."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import openai
import pytest
from agentsensus import JudgeRequest, Memory, Store, embedders, judges
from agentsensus.llm.client import LLMError
from agentsensus.llm.judge import LLMJudge, MalformedAnswer, build_messages, parse_verdicts
from fake_openai import FakeOpenAI

GHOST = "The ghost walks on the platform"
GHOST_AGAIN = "On the platform the ghost walks"


def make_judge(fake: FakeOpenAI, **kw: Any) -> LLMJudge:
    kw.setdefault("backoff", 0.01)  # keep retries quick; the schedule itself is not under test
    return judges.llm("fake-model", base_url=fake.url, **kw)


def open_store(tmp_path: Any, judge: Any = None) -> Store:
    # min_similarity=-1: every record is a candidate, so the judge alone decides.
    return Store(os.fspath(tmp_path / "store"), embed=embedders.hash, judge=judge, min_similarity=-1.0)


def request(statement: str, *candidates: tuple[int, str]) -> JudgeRequest:
    return JudgeRequest(statement, "B", [Memory(i, t, frozenset({"A"}), 0, 0.9, "candidate") for i, t in candidates])


def prompt_requests(body: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(body["messages"][-1]["content"])["requests"]  # type: ignore[no-any-return]


def test_one_prompt_per_deposit_covers_every_request(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake)
    with open_store(tmp_path, j) as s:
        s.deposit("A", [GHOST, "Hamlet swears revenge"])
        assert fake.log() == []  # an empty store has no candidates: no call
        d = s.deposit("B", [GHOST_AGAIN, "Horatio doubts the tale", "Hamlet revenge swears"])
        assert d.merged == [True, False, True]
        assert d.ids[0] == 1 and d.ids[2] == 2
        assert s.get(1).owners == {"A", "B"}
    bodies = fake.log()
    assert len(bodies) == 1
    assert [r["statement"] for r in prompt_requests(bodies[0])] == [
        GHOST_AGAIN,
        "Horatio doubts the tale",
        "Hamlet revenge swears",
    ]
    assert bodies[0]["response_format"] == {"type": "json_object"}
    assert bodies[0]["temperature"] == 0.0
    c = j.counters()
    assert (c["deposits"], c["requests"], c["prompts"], c["merges"], c["calls"]) == (1, 3, 1, 2, 1)
    assert c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 and c["seconds"] > 0


def test_verdict_cache_is_keyed_by_reporter_statement_and_candidate_ids(fake: FakeOpenAI) -> None:
    j = make_judge(fake)
    r = request(GHOST_AGAIN, (1, GHOST), (2, "Hamlet swears revenge"))
    assert j([r]) == [1]
    # Same reporter, statement and candidate ids (in another order, with other scores): cached.
    same = JudgeRequest(GHOST_AGAIN, "B", list(reversed(r.candidates)))
    assert j([same]) == [1]
    assert len(fake.log()) == 1 and j.stats.cache_hits == 1
    # Another reporter is another question ("I told Ophelia" depends on who says it).
    assert j([JudgeRequest(GHOST_AGAIN, "C", r.candidates)]) == [1]
    assert len(fake.log()) == 2
    # Another candidate set is another question.
    assert j([request(GHOST_AGAIN, (1, GHOST), (3, "Horatio doubts"))]) == [1]
    assert len(fake.log()) == 3
    # A mixed deposit sends only the uncached requests.
    assert j([same, request("Horatio doubts", (3, "Horatio doubts"))]) == [1, 3]
    assert [p["statement"] for p in prompt_requests(fake.log()[-1])] == ["Horatio doubts"]
    j.clear_cache()
    assert j([same]) == [1] and len(fake.log()) == 5


def test_provisional_ids_are_never_cached(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake)
    with open_store(tmp_path, j) as s:
        deps = s.deposit_many([("A", [GHOST], None), ("B", [GHOST_AGAIN], None)])
        assert deps[1].merged == [True] and deps[1].ids == deps[0].ids
    assert j.counters()["merges"] == 1
    assert all(k[1] and min(k[1]) >= 0 for k in j._cache)


def test_a_malformed_answer_is_retried(fake: FakeOpenAI) -> None:
    j = make_judge(fake)
    fake.script({"content": "Sure! The first one matches."})
    assert j([request(GHOST_AGAIN, (1, GHOST))]) == [1]
    assert len(fake.log()) == 2
    assert (j.stats.malformed, j.stats.prompts, j.stats.fallbacks) == (1, 2, 0)


def test_a_partial_answer_never_merges(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake, answer_retries=2)
    partial = json.dumps({"verdicts": [{"request": 0, "match": 1}]})  # two requests were asked
    with open_store(tmp_path, j) as s:
        s.deposit("A", [GHOST, "Hamlet swears revenge"])
        fake.script({"content": partial}, {"content": partial}, {"content": partial})
        d = s.deposit("B", [GHOST_AGAIN, "Hamlet revenge swears"])
        assert d.merged == [False, False]
        assert s.stats().merges == 0 and s.stats().records == 4
    assert len(fake.log()) == 3
    assert (j.stats.malformed, j.stats.fallbacks, j.stats.merges) == (3, 2, 0)
    # Fallbacks are not verdicts: the same question is asked again next time.
    assert j([request(GHOST_AGAIN, (1, GHOST), (2, "Hamlet swears revenge"))]) == [1]


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "[]",
        '{"verdicts": {"0": 1}}',
        '{"verdicts": [{"request": 0, "match": 7}]}',  # 7 was not offered
        '{"verdicts": [{"request": 0, "match": "1"}]}',  # a string is not an id
        '{"verdicts": [{"request": 0, "match": true}]}',
        '{"verdicts": [{"request": 1, "match": 1}]}',
        '{"verdicts": [{"request": 0}]}',
        '{"verdicts": [{"request": 0, "match": 1}, {"request": 1, "match": null}]}',
        '{"verdicts": [{"request": 0, "match": 1}]} and more',
    ],
)
def test_parse_verdicts_refuses_anything_but_complete_valid_verdicts(answer: str) -> None:
    with pytest.raises(MalformedAnswer):
        parse_verdicts(answer, [request(GHOST_AGAIN, (1, GHOST), (2, "other"))])


def test_parse_verdicts_accepts_valid_and_fenced_answers() -> None:
    reqs = [request("a b", (1, "a b")), request("c", (5, "d"), (-2, "c"))]
    body = '{"verdicts": [{"request": 0, "match": 1}, {"request": 1, "match": -2}]}'
    assert parse_verdicts(body, reqs) == [1, -2]
    assert parse_verdicts(f"```json\n{body}\n```", reqs) == [1, -2]
    assert parse_verdicts('{"verdicts": [{"request": 0, "match": null}, {"request": 1, "match": null}]}', reqs) == [
        None,
        None,
    ]
    payload = json.loads(build_messages(reqs)[1]["content"])
    assert payload["requests"][1] == {
        "request": 1,
        "reported_by": "B",
        "statement": "c",
        "candidates": [{"id": 5, "reported_by": "A", "text": "d"}, {"id": -2, "reported_by": "A", "text": "c"}],
    }


def test_transient_failures_are_retried_with_backoff(fake: FakeOpenAI) -> None:
    j = make_judge(fake, retries=3)
    fake.script({"status": 503}, {"status": 429, "headers": {"Retry-After": "0"}}, {"status": 500})
    assert j([request(GHOST_AGAIN, (1, GHOST))]) == [1]
    u = j.client.usage
    assert (u.calls, u.retries, u.errors) == (4, 3, 3)
    assert j.stats.prompts == 1  # transport retries are the client's, not new prompts


def test_a_timeout_is_retried(fake: FakeOpenAI) -> None:
    j = make_judge(fake, timeout=0.3, retries=1)
    fake.script({"delay": 1.5})
    assert j([request(GHOST_AGAIN, (1, GHOST))]) == [1]
    assert (j.client.usage.errors, j.client.usage.retries) == (1, 1)


def test_an_unreachable_endpoint_means_no_match_by_default(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake, retries=1)
    with open_store(tmp_path, j) as s:
        s.deposit("A", [GHOST])
        fake.script({"status": 503}, {"status": 503})
        d = s.deposit("B", [GHOST_AGAIN])
        assert d.merged == [False]
    assert j.stats.fallbacks == 1 and j.client.usage.errors == 2


def test_on_error_raise_leaves_the_store_unchanged(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake, retries=1, on_error="raise")
    with open_store(tmp_path, j) as s:
        s.deposit("A", [GHOST])
        before = s.stats()
        fake.script({"status": 502}, {"status": 502})
        with pytest.raises(LLMError):
            s.deposit("B", [GHOST_AGAIN])
        assert s.stats() == before


def test_a_permanent_error_is_not_retried_and_falls_back(fake: FakeOpenAI) -> None:
    j = make_judge(fake, retries=3)
    fake.script({"status": 401})
    assert j([request(GHOST_AGAIN, (1, GHOST))]) == [None]
    assert j.client.usage.calls == 1
    assert (j.stats.failures, j.stats.fallbacks, j.client.usage.errors) == (1, 1, 1)
    r = make_judge(fake, retries=3, on_error="raise")
    fake.script({"status": 401})
    with pytest.raises(openai.AuthenticationError):
        r([request(GHOST_AGAIN, (1, GHOST))])
    assert r.client.usage.calls == 1


def test_adeposit_with_the_async_judge(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake)

    async def run(s: Store) -> list[Any]:
        await s.adeposit("A", [GHOST, "Hamlet swears revenge"], judge=j.ajudge)
        fake.script({"content": "not json"}, {"status": 503})
        return [await s.adeposit("B", [GHOST_AGAIN], judge=j.ajudge), await s.adeposit("C", [GHOST], judge=j.ajudge)]

    with open_store(tmp_path) as s:
        b, c = asyncio.run(run(s))
        assert b.merged == [True] and b.ids == [1]
        assert c.merged == [True]  # an exact duplicate: resolved without the judge
        assert s.get(1).owners == {"A", "B", "C"}
        # A second event loop gets a client of its own.
        d = asyncio.run(s.adeposit("D", ["Hamlet revenge swears"], judge=j.ajudge))
        assert d.merged == [True]
    assert (j.stats.malformed, j.client.usage.errors) == (1, 1)


def test_options_and_json_mode_reach_the_request(fake: FakeOpenAI) -> None:
    j = make_judge(fake, json_mode=False, temperature=None, max_tokens=64, options={"seed": 7})
    j([request(GHOST_AGAIN, (1, GHOST))])
    body = fake.log()[0]
    assert "response_format" not in body and "temperature" not in body
    assert (body["seed"], body["max_tokens"], body["model"]) == (7, 64, "fake-model")


@pytest.mark.parametrize(
    "kw",
    [{"retries": -1}, {"timeout": -1}, {"answer_retries": -1}, {"on_error": "ignore"}, {"cache_size": -5}],
)
def test_bad_settings_are_refused(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        judges.llm("m", base_url="http://127.0.0.1:9/v1", **kw)
