"""The commit's conflict branches, each hit on purpose.

A deposit is planned on a snapshot (prepare), judged with no transaction
open, and committed; the commit refuses a plan that another writer made
stale in between, and the deposit is planned again. Here the judge itself is
that other writer: while it is being asked, it deposits into (or forgets
from) the same store, so the rival commit lands between prepare and commit
every time, with no threads and no timing. Each test then reads which
branch was taken from what is observable: the judge's calls (a retry asks
again, with the rival's record among the candidates), the ids, owners and
merges the deposit ended in, or the error.

The four branches (Store::commit_deposit in cpp/src/store/store_deposit.cpp):
  - a new record whose text was committed meanwhile (identical);
  - a new record similar to one committed meanwhile (similar);
  - a merge whose survivor was deleted meanwhile (deleted);
  - a merge whose survivor's text changed meanwhile (changed);
and ContentionError when every attempt meets one.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import pytest
from agentsensus import ContentionError, JudgeRequest, Store
from agentsensus._core import CommitPlan
from agentsensus._store.normalize import text_digest
from agentsensus.store import _MAX_ATTEMPTS
from helpers import DIM


def axis(i: int, tilt: int = -1, t: float = 0.0) -> np.ndarray:
    """The unit vector along axis i, tilted by t toward axis `tilt`:
    axis(0, 1, t) and axis(0, 2, t) have cosine 1 / (1 + t**2) to each other,
    and every axis is orthogonal to every other."""
    v = np.zeros(DIM, np.float32)
    v[i] = 1.0
    if tilt >= 0:
        v[tilt] = t
    return (v / np.linalg.norm(v)).astype(np.float32)


A_TEXT = "the delivery van was parked on the corner"


class RivalJudge:
    """A judge that, on its first call only, runs `rival` (a write into the
    same store) before answering `answer(requests)`; it records every call."""

    def __init__(self, rival: Callable[[], None], answer: Callable[[list[JudgeRequest]], list[Optional[int]]]):
        self.rival = rival
        self.answer = answer
        self.calls: list[list[JudgeRequest]] = []

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        self.calls.append(list(requests))
        if len(self.calls) == 1:
            self.rival()
        return self.answer(requests)


def none_judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
    return [None] * len(requests)


def first_judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
    return [r.candidates[0].id for r in requests]


def candidate_ids(call: list[JudgeRequest]) -> set[int]:
    return {c.id for r in call for c in r.candidates}


def seed(store: Store) -> int:
    """One record A, owned by "a" alone, along axis 0."""
    (rid,) = store.deposit("a", [A_TEXT], axis(0)[None, :]).ids
    return rid


def test_identical_statement_committed_meanwhile(store):
    a = seed(store)
    text = "a delivery van was parked at the corner"
    rival: dict[str, int] = {}

    def deposit_same_text() -> None:
        # The same statement, with a vector orthogonal to everything: only
        # the exact-text check can see it.
        rival["id"] = store.deposit("rival", [text], axis(5)[None, :]).ids[0]

    judge = RivalJudge(deposit_same_text, none_judge)
    d = store.deposit("outer", [text], axis(0, 1, 0.2)[None, :], judge=judge)

    # The retry found the rival's record by its text: an exact merge, no
    # second judge call.
    assert len(judge.calls) == 1 and candidate_ids(judge.calls[0]) == {a}
    assert d.ids == [rival["id"]] and d.merged == [True]
    assert store.get(rival["id"]).owners == frozenset({"rival", "outer"})
    assert store.owned("outer") == [rival["id"]]
    assert store.verify() == []


def test_similar_record_committed_meanwhile(store):
    a = seed(store)
    rival: dict[str, int] = {}

    def deposit_similar() -> None:
        # Another wording along the same direction; the rival keeps it apart.
        rival["id"] = store.deposit(
            "rival", ["the van stood parked on the corner"], axis(0, 2, 0.2)[None, :], judge=none_judge
        ).ids[0]

    judge = RivalJudge(deposit_similar, none_judge)
    d = store.deposit("outer", ["a delivery van parked at the corner"], axis(0, 1, 0.2)[None, :], judge=judge)

    # The first plan (a new record) was refused; the retry asked again, now
    # with the rival's record among the candidates.
    assert len(judge.calls) == 2
    assert candidate_ids(judge.calls[0]) == {a}
    assert candidate_ids(judge.calls[1]) == {a, rival["id"]}
    assert d.merged == [False] and d.ids[0] not in (a, rival["id"])
    assert store.get(d.ids[0]).owners == frozenset({"outer"})
    assert store.stats().records == 3
    assert store.verify() == []


def test_survivor_deleted_meanwhile(store):
    a = seed(store)

    def forget_a() -> None:
        store.forget("a", a)  # its only owner: the record is deleted

    judge = RivalJudge(forget_a, first_judge)
    d = store.deposit("outer", ["a delivery van parked at the corner"], axis(0, 1, 0.2)[None, :], judge=judge)

    # The merge into a was refused; the retry had no candidate left, so no
    # judge call, and the statement became a record of its own.
    assert len(judge.calls) == 1 and candidate_ids(judge.calls[0]) == {a}
    assert d.merged == [False] and d.ids[0] != a
    with pytest.raises(KeyError):
        store.get(a)
    assert store.get(d.ids[0]).owners == frozenset({"outer"})
    assert list(store.merges()) == []
    assert store.verify() == []


def test_survivor_changed_meanwhile(store):
    a = seed(store)
    shorter = "van parked on corner"

    def merge_shorter() -> None:
        # keep_shorter: the rival's merge rewrites a's text.
        d = store.deposit("rival", [shorter], axis(0, 2, 0.2)[None, :], judge=first_judge)
        assert d.ids == [a] and d.merged == [True]

    judge = RivalJudge(merge_shorter, first_judge)
    outer_text = "a delivery van was parked at the corner of the street"
    d = store.deposit("outer", [outer_text], axis(0, 1, 0.2)[None, :], judge=judge)

    # The first merge expected a's old text and was refused; the retry saw
    # the rival's text and merged into it.
    assert len(judge.calls) == 2
    assert [c.text for c in judge.calls[0][0].candidates] == [A_TEXT]
    assert [c.text for c in judge.calls[1][0].candidates] == [shorter]
    assert d.ids == [a] and d.merged == [True]
    rec = store.get(a)
    assert rec.text == shorter and rec.owners == frozenset({"a", "rival", "outer"})
    assert [(m.owner, m.discarded) for m in store.merges()] == [("rival", A_TEXT), ("outer", outer_text)]
    assert store.verify() == []


def test_contention_error_after_every_attempt_conflicts(store):
    a = seed(store)
    calls: list[list[JudgeRequest]] = []

    def judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
        # Every attempt: a rival record similar to the statement lands
        # between prepare and commit, so every plan is stale.
        calls.append(list(requests))
        n = len(calls)
        store.deposit("rival", [f"rival wording number {n}"], axis(0, 2 + n % 10, 0.2)[None, :], judge=none_judge)
        return [None] * len(requests)

    before = store.stats().records
    with pytest.raises(ContentionError, match="gave up after"):
        store.deposit("outer", ["a delivery van parked at the corner"], axis(0, 1, 0.2)[None, :], judge=judge)

    assert len(calls) == _MAX_ATTEMPTS
    # Attempt n saw the rivals of attempts before it: a and n - 1 rivals.
    assert [len(candidate_ids(c)) for c in calls] == [min(n, 8) for n in range(1, _MAX_ATTEMPTS + 1)]
    assert store.owned("outer") == []
    assert store.stats().records == before + _MAX_ATTEMPTS
    assert a in store.owned("a")
    assert store.verify() == []


# -- the same branches at the engine's seam, where the conflict says why -------


def _plan(owner: str, text: str, vec: np.ndarray, target: int, expected: Optional[str], kept: Optional[str]):
    return CommitPlan(
        owner=owner,
        round=0,
        texts=[text],
        digests=text_digest(text),
        vectors=vec[None, :],
        targets=[target],
        expected=[expected],
        kept=[kept],
    )


@pytest.mark.parametrize(
    "branch, why",
    [
        ("identical", "an identical statement committed meanwhile"),
        ("similar", "a similar record committed meanwhile"),
        ("deleted", "was deleted meanwhile"),
        ("changed", "changed meanwhile"),
    ],
)
def test_engine_commit_names_the_conflict(store, branch, why):
    a = seed(store)
    engine = store._handles().engine
    text = "a delivery van parked at the corner"
    vec = axis(0, 1, 0.2)
    prepared = engine.prepare(vec[None, :], text_digest(text), 8, store.min_similarity)
    seq = prepared[0]
    if branch in ("identical", "similar"):
        plan = _plan("outer", text, vec, 0, None, None)
    else:
        plan = _plan("outer", text, vec, a, A_TEXT, A_TEXT)

    if branch == "identical":
        store.deposit("rival", [text], axis(5)[None, :])
    elif branch == "similar":
        store.deposit("rival", ["the van stood on the corner"], axis(0, 2, 0.2)[None, :], judge=none_judge)
    elif branch == "deleted":
        store.forget("a", a)
    else:
        store.deposit("rival", ["van on corner"], axis(0, 2, 0.2)[None, :], judge=first_judge)

    before = (store.stats(), list(store.merges()), store.owned("outer"))
    ok, result = engine.commit([plan], seq, store.min_similarity)
    assert ok is False and why in result
    assert (store.stats(), list(store.merges()), store.owned("outer")) == before  # nothing written

    # The same plan on a fresh snapshot commits (the conflict was the rival's).
    if branch in ("identical", "similar"):
        seq2 = engine.prepare(vec[None, :], text_digest(text), 8, store.min_similarity)[0]
        ok, result = engine.commit([plan], seq2, store.min_similarity)
        assert ok is (branch == "similar")  # an identical text is refused on any snapshot
