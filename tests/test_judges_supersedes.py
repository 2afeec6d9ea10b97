"""The offline judges' supersession rule, ``judges.supersedes_when``: what it
retires, what it must not (two different people each moving, a restatement,
another fact about the same subject), and that the built-in judges never
answer ``Supersedes`` unless wrapped."""

from __future__ import annotations

import os
from typing import Any

import pytest
from agentsensus import JudgeRequest, Memory, Store, Supersedes, embedders, judges


def request(statement: str, *candidates: str, owner: str = "A") -> JudgeRequest:
    """Candidates get ids 1, 2, ... in the order given (best first), scores falling."""
    cands = [Memory(i + 1, t, frozenset({"A"}), 1, 0.9 - i / 10, "candidate") for i, t in enumerate(candidates)]
    return JudgeRequest(statement, owner, cands)


RETIRES = [
    ("Alice moved to Berlin", "Alice lives in Paris"),
    ("Alice moved to Madrid", "Alice moved to Berlin"),
    ("Alice now lives in Berlin", "Alice lives in Paris"),
    ("Alice no longer lives in Paris", "Alice lives in Paris"),
    ("Polonius died", "Polonius is wounded"),
    ("The meeting was cancelled", "The meeting is on Monday"),
    ("The meeting was rescheduled to Friday", "The meeting is on Monday"),
    ("The budget was corrected to 40 dollars", "The budget is 30 dollars"),
    ("Alice's flight now leaves at 9", "Alice's flight leaves at 7"),
]

KEEPS = [
    # Two different people each moving: another subject.
    ("Bob moved to Rome", "Alice moved to Berlin"),
    ("Bob moved to Rome", "Alice lives in Paris"),
    # Restatements: the candidate already says the change.
    ("Alice has moved to Berlin", "Alice moved to Berlin in May"),
    ("Alice now lives in Berlin", "Alice lives in Berlin"),
    ("Polonius died", "Polonius died in the night"),
    ("Alice lives in Paris now", "Alice lives in Paris"),
    # Another fact about the same subject.
    ("Alice moved to Berlin", "Alice likes coffee"),
    # The subject goes on in the candidate, or is only mentioned there.
    ("Alice moved to Berlin", "Alice's brother lives in Rome"),
    ("Alice moved to Berlin", "Alice and Bob live in Paris"),
    ("Alice moved to Berlin", "Bob visited Alice in Paris"),
    # A pronoun: who it is depends on the reporter.
    ("I moved to Berlin", "I live in Paris"),
    # No change marker at all.
    ("Alice lives in Berlin", "Alice lives in Paris"),
]


@pytest.mark.parametrize(("statement", "older"), RETIRES)
def test_a_reported_change_supersedes_the_older_state(statement: str, older: str) -> None:
    judge = judges.supersedes_when(judges.never)
    assert judge([request(statement, "Horatio keeps watch", older)]) == [Supersedes(2)]


@pytest.mark.parametrize(("statement", "other"), KEEPS)
def test_the_rule_retires_nothing_else(statement: str, other: str) -> None:
    judge = judges.supersedes_when(judges.never)
    assert judge([request(statement, other)]) == [None]


def test_the_built_in_judges_never_supersede_unless_wrapped() -> None:
    r = request("Alice moved to Berlin", "Alice lives in Paris")
    assert judges.exact([r]) == [None]
    assert judges.never([r]) == [None]
    assert judges.threshold(0.5)([r]) == [1]  # a stand-in merge, as before
    assert judges.supersedes_when(judges.threshold(0.5))([r]) == [Supersedes(1)]


def test_the_wrapped_judge_keeps_every_answer_the_rule_does_not_contradict() -> None:
    restated = request("Alice has moved to Berlin", "Alice lives in Paris", "Alice moved to Berlin")

    def merge_into(i: int) -> Any:
        return lambda reqs: [i] * len(reqs)

    # A merge into the candidate that already says the change stands; the older state is not retired as well.
    assert judges.supersedes_when(merge_into(2))([restated]) == [2]
    # A merge into the older state would drop the change: it becomes a supersession of it.
    assert judges.supersedes_when(merge_into(1))([restated]) == [Supersedes(1)]
    # With no merge, the first (best ranked) candidate the rule holds for is superseded.
    two = request("Alice moved to Berlin", "Alice likes coffee", "Alice lives in Paris", "Alice lived in Rome")
    assert judges.supersedes_when(judges.never)([two]) == [Supersedes(2)]
    # The base judge's own Supersedes stands, and each request is judged alone.
    base = judges.supersedes_when(lambda reqs: [Supersedes(1), None])
    assert base([two, request("Bob moved to Rome", "Alice lives in Paris")]) == [Supersedes(1), None]
    assert judges.supersedes_when().__name__ == "supersedes_when(exact)"


def test_a_judge_it_cannot_wrap_is_refused() -> None:
    async def coroutine_judge(reqs: list[JudgeRequest]) -> list[None]:
        return [None] * len(reqs)

    with pytest.raises(TypeError, match="sync"):
        judges.supersedes_when(coroutine_judge)
    with pytest.raises(TypeError, match="sync"):
        judges.supersedes_when(0.8)  # type: ignore[arg-type]


def test_a_deposit_through_the_rule_retires_only_the_moved_subject(tmp_path: Any) -> None:
    judge = judges.supersedes_when(judges.never)
    path = os.fspath(tmp_path / "store")
    # min_similarity=-1: every record is a candidate, so the judge alone decides.
    with Store(path, embed=embedders.hash, judge=judge, min_similarity=-1.0) as s:
        paris, rome = s.deposit("A", ["Alice lives in Paris", "Bob lives in Rome"], round=1).ids
        s.deposit("B", ["Alice lives in Paris"], round=1)
        (berlin,) = s.deposit("A", ["Alice moved to Berlin"], round=2).ids
        (madrid,) = s.deposit("A", ["Bob moved to Madrid"], round=3).ids
        assert [m.id for m in s.chain(berlin)] == [paris, berlin]
        assert [m.id for m in s.chain(madrid)] == [rome, madrid]
        assert {m.id for m in s.recall("A", "Alice Bob lives moved", k=10)} == {berlin, madrid}
        assert {m.id for m in s.recall("A", "Alice Bob lives moved", k=10, as_of=1)} == {paris, rome}
        # B's view is B's: A's move retires nothing of B's.
        assert {m.id for m in s.recall("B", "Alice lives", k=10)} == {paris}
