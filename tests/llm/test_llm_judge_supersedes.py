"""The LLM judge's third answer, ``Supersedes(id)``, against the fake
OpenAI-compatible server: opt-in (off, prompts and answers are as before),
parsed from ``"supersedes"``, and every doubt (a refusal, broken JSON, an id
not offered, a failing endpoint) still ends in "no match"."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from agentsensus import JudgeRequest, Memory, Store, Supersedes, embedders, judges
from agentsensus.llm.judge import (
    SUPERSEDES_PROMPT,
    SYSTEM_PROMPT,
    LLMJudge,
    MalformedAnswer,
    build_messages,
    parse_verdicts,
)
from fake_openai import REFUSAL, FakeOpenAI

PARIS = "Alice lives in Paris"
BERLIN = "Alice moved to Berlin"


def make_judge(fake: FakeOpenAI, **kw: Any) -> LLMJudge:
    kw.setdefault("backoff", 0.01)  # keep retries quick; the schedule itself is not under test
    return judges.llm("fake-model", base_url=fake.url, **kw)


def request(statement: str, *candidates: tuple[int, str]) -> JudgeRequest:
    return JudgeRequest(statement, "A", [Memory(i, t, frozenset({"A"}), 1, 0.9, "candidate") for i, t in candidates])


def answer(*verdicts: dict[str, Any]) -> dict[str, str]:
    return {"content": json.dumps({"verdicts": list(verdicts)})}


def test_off_by_default_the_prompt_and_the_answers_are_as_before(fake: FakeOpenAI) -> None:
    j = make_judge(fake)
    r = request(BERLIN, (1, PARIS))
    # A "supersedes" the judge did not ask for is ignored: it never retires a record unasked.
    fake.script(answer({"request": 0, "match": None, "supersedes": 1}))
    assert j([r]) == [None]
    assert j.stats.malformed == 0 and j.stats.supersedes == 0
    body = fake.log()[0]
    assert body["messages"] == build_messages([r])
    assert body["messages"][0]["content"] == SYSTEM_PROMPT and "supersede" not in SYSTEM_PROMPT


def test_the_supersedes_prompt_asks_the_third_answer(fake: FakeOpenAI) -> None:
    j = make_judge(fake, supersedes=True)
    r = request(BERLIN, (1, PARIS))
    assert j([r]) == [Supersedes(1)]  # the toy model answers "supersedes" when asked for it
    messages = fake.log()[0]["messages"]
    assert messages[0]["content"] == SUPERSEDES_PROMPT
    assert messages[1] == build_messages([r])[1]  # the requests are shown as before
    assert SUPERSEDES_PROMPT.startswith(SYSTEM_PROMPT.split("\n\nAnswer with")[0])
    assert "Two different people each moving" in SUPERSEDES_PROMPT
    # The prompt's budget counts the longer prompt.
    assert j._room() == make_judge(fake)._room() - (len(SUPERSEDES_PROMPT) - len(SYSTEM_PROMPT))


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ({"request": 0, "match": 1}, 1),  # the format without "supersedes" still reads
        ({"request": 0, "match": None}, None),
        ({"request": 0, "match": None, "supersedes": 2}, Supersedes(2)),
        ({"request": 0, "supersedes": 2}, Supersedes(2)),
        ({"request": 0, "match": 1, "supersedes": None}, 1),
        ({"request": 0, "match": None, "supersedes": None}, None),
    ],
)
def test_parse_verdicts_reads_supersedes_when_asked(verdict: dict[str, Any], expected: Any) -> None:
    reqs = [request(BERLIN, (1, "Alice went to Berlin"), (2, PARIS))]
    assert parse_verdicts(json.dumps({"verdicts": [verdict]}), reqs, supersedes=True) == [expected]


@pytest.mark.parametrize(
    "verdict",
    [
        {"request": 0, "match": 1, "supersedes": 2},  # both a match and a supersession
        {"request": 0, "match": None, "supersedes": 7},  # 7 was not offered
        {"request": 0, "supersedes": "2"},
        {"request": 0, "supersedes": True},
        {"request": 0},
    ],
)
def test_parse_verdicts_refuses_a_bad_supersedes(verdict: dict[str, Any]) -> None:
    reqs = [request(BERLIN, (1, "Alice went to Berlin"), (2, PARIS))]
    with pytest.raises(MalformedAnswer):
        parse_verdicts(json.dumps({"verdicts": [verdict]}), reqs, supersedes=True)


def test_refusals_broken_json_and_unknown_ids_are_asked_again(fake: FakeOpenAI) -> None:
    j = make_judge(fake, supersedes=True, answer_retries=3)
    reqs = [request(BERLIN, (1, PARIS)), request("Bob moved to Rome", (3, "Bob lives in Oslo")), request("x", (4, "y"))]
    fake.script(
        {"content": REFUSAL},
        {"content": '{"verdicts": [{"request": 0, "supersedes":'},
        answer(
            {"request": 0, "match": None, "supersedes": 3},  # 3 belongs to request 1
            {"request": 1, "match": None, "supersedes": 3},
            {"request": 2, "match": None},
        ),
        answer(
            {"request": 0, "match": None, "supersedes": 1},
            {"request": 1, "match": 3},
            {"request": 2, "match": None, "supersedes": None},
        ),
    )
    assert j(reqs) == [Supersedes(1), 3, None]
    s = j.stats
    assert (s.prompts, s.malformed, s.fallbacks, s.merges, s.supersedes) == (4, 3, 0, 1, 1)
    # A valid verdict is cached like any other, Supersedes included.
    assert j(reqs[:1]) == [Supersedes(1)] and j.stats.cache_hits == 1 and len(fake.log()) == 4


def test_when_no_valid_answer_comes_nothing_is_superseded(fake: FakeOpenAI) -> None:
    j = make_judge(fake, supersedes=True, answer_retries=1, retries=1)
    r = request(BERLIN, (1, PARIS))
    fake.script(answer({"request": 0, "match": None, "supersedes": 9}), {"content": REFUSAL})
    assert j([r]) == [None]
    assert (j.stats.malformed, j.stats.fallbacks, j.stats.supersedes) == (2, 1, 0)
    fake.script({"status": 503}, {"status": 503})  # the endpoint fails for good
    assert j([r]) == [None]
    assert (j.stats.failures, j.stats.fallbacks) == (1, 2)
    # Fallbacks are not verdicts: the next call asks again and gets the model's answer.
    assert j([r]) == [Supersedes(1)]


def test_random_faults_never_turn_into_a_wrong_verdict(fake: FakeOpenAI) -> None:
    fake.faults(fail_rate=0.2, malformed_rate=0.2, refusal_rate=0.2, seed=3)
    j = make_judge(fake, supersedes=True, retries=1, answer_retries=1, cache_size=0)
    moves = [(request(f"P{i} moved to Berlin", (i, f"P{i} lives in Paris")), Supersedes(i)) for i in range(1, 13)]
    others = [(request(f"Q{i} moved to Rome", (i, f"P{i} lives in Paris")), None) for i in range(1, 13)]
    got = [j([r])[0] for r, _ in moves + others]
    for (_, truth), verdict in zip(moves + others, got):
        assert verdict in (truth, None)  # the model's answer, or "no match" when none came
    s = j.stats
    assert s.supersedes == sum(isinstance(v, Supersedes) for v in got) > 0
    # Some moves fell back to "no match"; the others' fallbacks look like their true answer.
    assert 0 < sum(v is None for v in got[: len(moves)]) <= s.fallbacks


def test_a_deposit_superseded_by_the_llm_judge_changes_only_its_owners_view(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake, supersedes=True)
    path = os.fspath(tmp_path / "store")
    # min_similarity=-1: every record is a candidate, so the judge alone decides.
    with Store(path, embed=embedders.hash, judge=j, min_similarity=-1.0) as s:
        (paris,) = s.deposit("A", [PARIS], round=1).ids
        s.deposit("B", [PARIS], round=1)  # an exact duplicate: merged without the judge
        d = s.deposit("A", [BERLIN], round=2)
        berlin = d.ids[0]
        assert d.merged == [False] and berlin != paris
        assert [m.id for m in s.chain(berlin)] == [paris, berlin]
        assert [m.text for m in s.recall("A", "Alice", k=5)] == [BERLIN]
        assert [m.text for m in s.recall("A", "Alice", k=5, as_of=1)] == [PARIS]
        # A's supersession rewrites nothing of B's: B still holds Paris as current.
        assert [m.text for m in s.recall("B", "Alice", k=5)] == [PARIS]
        # Another person moving supersedes nothing of Alice's.
        (rome,) = asyncio.run(s.adeposit("A", ["Bob moved to Rome"], round=3, judge=j.ajudge)).ids
        assert s.get(rome).supersedes is None
        assert {m.id for m in s.recall("A", "Alice Bob", k=5)} == {berlin, rome}
        # B's view changes when B's own statement ends in the newer record.
        s.deposit("B", [BERLIN], round=4)
        assert [m.text for m in s.recall("B", "Alice", k=5)] == [BERLIN]
        assert [m.text for m in s.recall("B", "Alice", k=5, as_of=3)] == [PARIS]
    assert json.loads(fake.log()[0]["messages"][1]["content"])["requests"][0]["statement"] == BERLIN
    assert (j.stats.supersedes, j.stats.merges) == (1, 0)
