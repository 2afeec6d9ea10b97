"""The Store contract, run against a local ``Store`` and a ``RemoteStore``
of a ``StoreActor`` on a local Ray cluster: the same calls give the same
results and the same one-line errors, with nothing written on bad input."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import struct
from typing import Any, Callable, Iterator, Optional

import numpy as np
import pytest
import ray
from agentsensus import Error, JudgeRequest, Store, judges
from agentsensus.ray import RemoteStore, StoreActor
from conftest import pickle_by_value
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # a Ray cluster

DIM = 8
pickle_by_value(__name__)


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def first_candidate(requests: list[JudgeRequest]) -> list[Optional[int]]:
    """Merges every statement into its best candidate: a judge defined
    here, so it travels to the actor by value."""
    return [r.candidates[0].id if r.candidates else None for r in requests]


Opener = Callable[..., Any]


@pytest.fixture(params=["local", "remote"])
def open_store(request, tmp_path) -> Iterator[Opener]:
    """Opens a store at a fresh path: a ``Store`` here, or a ``RemoteStore``
    of a ``StoreActor`` (whose store opens in the actor's process)."""
    opened: list[Any] = []
    n = [0]

    def open_(**options: Any) -> Any:
        n[0] += 1
        path = os.fspath(tmp_path / f"s{n[0]}")
        if request.param == "local":
            s: Any = Store(path, dim=DIM, **options)
        else:
            request.getfixturevalue("cluster")
            s = RemoteStore(StoreActor.remote(path, dim=DIM, **options))
        opened.append(s)
        return s

    yield open_
    for s in opened:
        s.shutdown() if isinstance(s, RemoteStore) else s.close()


def test_a_deposit_makes_records_and_a_witness_merges(open_store) -> None:
    s = open_store()
    d = s.deposit("alice", ["the bridge fell", "the river rose"], np.stack([unit(1), unit(2)]), round=3)
    assert d.ids == [1, 2] and d.merged == [False, False]
    again = s.deposit("bob", ["the bridge fell"], unit(1)[None, :], round=4)
    assert again.ids == [1] and again.merged == [True]
    assert s.get(1).owners == frozenset({"alice", "bob"}) and s.get(1).round == 3
    assert s.owned("bob") == [1] and s.owned("alice") == [1, 2]
    assert s.neighbors(1) == [2]
    st_ = s.stats()
    assert (st_.records, st_.deposits, st_.merges, st_.shared, st_.linked, st_.agents) == (2, 2, 1, 1, 2, 2)
    assert [(m.survivor, m.owner, m.round) for m in s.merges()] == [(1, "bob", 4)]


def test_deposit_many_is_one_transaction_where_later_items_see_earlier(open_store) -> None:
    s = open_store()
    out = s.deposit_many([("a", ["x happened"], unit(1)[None, :]), ("b", ["x happened"], unit(1)[None, :])], round=1)
    assert [(d.ids, d.merged) for d in out] == [([1], [False]), ([1], [True])]
    before = s.stats()
    bad = [("c", ["fine"], unit(2)[None, :]), ("d", ["wrong shape"], np.zeros((1, DIM + 1), np.float32))]
    with pytest.raises(ValueError, match=r"^items\[1\]: vectors must have shape"):
        s.deposit_many(bad)
    assert s.stats() == before and s.owned("c") == []


def test_a_judge_given_at_open_runs_where_the_store_is(open_store) -> None:
    s = open_store(judge=first_candidate, min_similarity=-1.0)
    s.deposit("a", ["one thing"], unit(1)[None, :])
    d = s.deposit("b", ["quite another"], unit(2)[None, :])
    assert d.merged == [True] and s.stats().records == 1
    # a per-call judge overrides it
    assert s.deposit("c", ["a third"], unit(3)[None, :], judge=judges.never).merged == [False]


def test_adeposit_takes_a_coroutine_judge(open_store) -> None:
    s = open_store()
    s.deposit("a", ["the gate"], unit(5)[None, :])

    async def merge_all(requests: list[JudgeRequest]) -> list[Optional[int]]:
        await asyncio.sleep(0)
        return [r.candidates[0].id if r.candidates else None for r in requests]

    d = asyncio.run(s.adeposit("b", ["the gate, again"], unit(5)[None, :], judge=merge_all))
    assert d.merged == [True] and s.get(1).owners == frozenset({"a", "b"})


def test_recall_serves_only_the_owners_records_and_expands_edges(open_store) -> None:
    s = open_store()
    s.deposit("a", ["p", "q"], np.stack([unit(1), unit(2)]))
    s.deposit("b", ["r"], unit(3)[None, :])
    hits = s.recall("a", unit(1), k=1)
    assert [(m.text, m.via) for m in hits] == [("p", "hit"), ("q", "edge")]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[1].score is None
    assert [m.text for m in s.recall("a", unit(1), k=1, expand=False)] == ["p"]
    assert s.recall("b", unit(1), k=5) and all(m.text == "r" for m in s.recall("b", unit(1), k=5))
    assert s.recall("nobody", unit(1)) == []


def test_forget_leaves_and_the_last_owner_deletes(open_store) -> None:
    s = open_store()
    s.deposit("a", ["t"], unit(1)[None, :])
    s.deposit("b", ["t"], unit(1)[None, :])
    s.forget("a", 1)
    assert s.get(1).owners == frozenset({"b"})
    with pytest.raises(KeyError):
        s.forget("a", 1)
    s.forget("b", 1)
    with pytest.raises(KeyError, match="no record 1"):
        s.get(1)
    assert s.stats().records == 0


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda s: s.deposit("", ["x"], unit(1)[None, :]), ValueError, "owner"),
        (lambda s: s.deposit("a", [], None), ValueError, "statements is empty"),
        (lambda s: s.deposit("a", ["x"], None), ValueError, "vectors is required"),
        (lambda s: s.deposit("a", ["x"], np.full((1, DIM), np.nan, np.float32)), ValueError, "NaN"),
        (lambda s: s.recall("a", np.zeros(DIM + 2, np.float32)), ValueError, "query must have shape"),
        (lambda s: s.get("1"), TypeError, "id must be an int"),
        (lambda s: s.recall("a", unit(1), k=-1), ValueError, "k"),
    ],
)
def test_bad_input_is_the_same_one_line_error_and_writes_nothing(open_store, call, error, message) -> None:
    s = open_store()
    with pytest.raises(error, match=message) as e:
        call(s)
    assert "\n" not in str(e.value) and "Ray" not in str(e.value)
    assert s.stats().records == 0 and s.stats().deposits == 0


def test_the_fence_publishes_derives_and_checks(open_store) -> None:
    s = open_store()
    f = s.fence
    assert f.publish("req", "alice", "v1") == 1
    assert f.derive("plan", "planner", "the plan", {"req": 1}) == 1
    assert f.check("plan").current and f.head("req") == 1 and f.owner("req") == "alice"
    f.publish("req", "alice", "v2")
    c = f.check("plan")
    assert not c.current and [(x.key, x.recorded, x.head) for x in c.stale] == [("req", 1, 2)]
    assert f.keys() == ["plan", "req"] and f.value("req", 1) == b"v1" and f.verify() == []


def test_checkpoint_saves_the_index_at_the_journal_end(open_store) -> None:
    s = open_store()
    s.deposit_many([("a", [f"fact {i}"], unit(i)[None, :]) for i in range(4)])
    seq = s.checkpoint()
    with open(os.path.join(s.path, "index.usearch"), "rb") as f:
        assert struct.unpack("=Q", f.read(32)[24:])[0] == seq >= 4


def test_a_closed_store_refuses_calls(open_store) -> None:
    s = open_store()
    s.close()
    with pytest.raises(Error, match="closed"):
        s.stats()
    s.close()  # again: nothing


def untimed(memories: list[Any]) -> list[Any]:
    """Memories without their created/updated times (each store stamps its own clock)."""
    return [dataclasses.replace(m, created_at=None, updated_at=None) for m in memories]


@st.composite
def rounds(draw: Any) -> list[list[tuple[str, list[int]]]]:
    """Rounds of deposits: owner and statement seeds (equal seeds are the same statement)."""
    n = draw(st.integers(1, 3))
    item = st.tuples(st.sampled_from("abc"), st.lists(st.integers(0, 6), min_size=1, max_size=3, unique=True))
    return [draw(st.lists(item, min_size=1, max_size=3)) for _ in range(n)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=rounds())
def test_a_remote_store_gives_what_a_local_one_gives(cluster, tmp_path_factory, world) -> None:
    base = tmp_path_factory.mktemp("same")
    local = Store(os.fspath(base / "l"), dim=DIM)
    remote = RemoteStore(StoreActor.remote(os.fspath(base / "r"), dim=DIM))
    try:
        for r, batch in enumerate(world):
            items = [(o, [f"statement {i}" for i in seeds], np.stack([unit(i) for i in seeds])) for o, seeds in batch]
            assert remote.deposit_many(items, round=r) == local.deposit_many(items, round=r)
        assert remote.stats() == local.stats() and list(remote.merges()) == list(local.merges())
        for o in "abc":
            assert untimed(remote.recall(o, unit(0), k=3)) == untimed(local.recall(o, unit(0), k=3))
        got = [untimed(ms) for ms in remote.recall_many([(o, unit(1)) for o in "abc"], k=2)]
        assert got == [untimed(local.recall(o, unit(1), k=2)) for o in "abc"]
    finally:
        local.close()
        remote.shutdown()


def test_batch_reads_and_copy_to_give_what_one_call_each_gives(cluster, tmp_path) -> None:
    s = RemoteStore(StoreActor.remote(os.fspath(tmp_path / "s"), dim=DIM, judge=first_candidate))
    try:
        s.deposit_many([("a", ["fact 0", "fact 1"], np.stack([unit(0), unit(1)])), ("b", ["fact 0"], unit(0)[None, :])])
        ids = s.owned("a")
        assert s.get_many(ids) == [s.get(i) for i in ids] and len(ids) == 2
        assert s.neighbors_many(ids) == [s.neighbors(i) for i in ids] and s.neighbors_many(ids)[0] == [ids[1]]
        with pytest.raises(KeyError):
            s.get_many([ids[0], 99])
        judge = s.copy_to(os.fspath(tmp_path / "copy"))  # the store closed, copied and reopened
        assert judge([JudgeRequest("x", "a", [])]) == [None]  # the store's own judge, sent back
        s.deposit("c", ["fact 5"], unit(5)[None, :])  # the source still writes
        copy = Store(os.fspath(tmp_path / "copy"), dim=DIM)
        try:
            assert [copy.get(i) for i in ids] == s.get_many(ids) and copy.stats().records == s.stats().records - 1
        finally:
            copy.close()
    finally:
        s.shutdown()


def test_the_actor_restarts_and_serves_what_it_held(cluster, tmp_path) -> None:
    actor = StoreActor.options(max_restarts=1).remote(os.fspath(tmp_path / "s"), dim=DIM, checkpoint_every=2)
    s = RemoteStore(actor)
    for i in range(4):  # two checkpoints
        s.deposit("a", [f"fact {i}"], unit(i)[None, :])
    pid = ray.get(actor.info.remote())["pid"]
    os.kill(pid, signal.SIGKILL)  # the actor's process dies; Ray starts the actor again
    # reads wait for the restarted actor
    assert s.owned("a") == [1, 2, 3, 4]
    assert ray.get(actor.info.remote())["pid"] != pid
    assert [m.text for m in s.recall("a", unit(2), k=1, expand=False)] == ["fact 2"]
    assert s.verify() == []
    s.shutdown()


def test_an_actor_whose_store_cannot_open_says_why_in_one_line(cluster, tmp_path) -> None:
    with pytest.raises(Error, match=r"could not open: .*dim must be a positive int, got -1") as e:
        RemoteStore(StoreActor.remote(os.fspath(tmp_path / "s"), dim=-1))
    assert "\n" not in str(e.value)
