"""Plans fenced on memories: ``derive(..., memories=[ids])`` links records of
the store; a check finds the plan stale once a memory is superseded (any
owner's statement) or deleted, naming the memory and its successor."""

from __future__ import annotations

import io
import os
from typing import Any, Iterator

import pytest
from agentsensus import StalePlanError, Store, embedders
from agentsensus.planfence import MEMORY_OWNER, UnknownKeyError, memory_key
from agentsensus.planfence.transport import HeadsServer
from owner_process import moves


def open_store(path: str) -> Store:
    return Store(path, embed=embedders.hash, judge=moves, min_similarity=0.0)


@pytest.fixture
def mstore(tmp_path) -> Iterator[Store]:
    s = open_store(os.fspath(tmp_path / "store"))
    yield s
    s.close()


def test_done_when_a_superseded_memory_stales_the_plan_and_guard_replans_once_then_blocks(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    assert f.derive("trip", "A", "meet Alice in Paris", {}, memories=[paris]) == 1
    assert f.check("trip").current
    berlin = mstore.deposit("A", ["Alice moved to Berlin"], round=2).ids[0]
    assert berlin != paris and mstore.get(paris).superseded_by == berlin

    c = f.check("trip")
    assert not c.current
    [s] = c.stale
    assert (s.key, s.owner, s.recorded, s.head) == (memory_key(paris), MEMORY_OWNER, paris, berlin)
    assert s.reason == (
        f"memory {paris} ('Alice lives in Paris') was superseded by record {berlin} ('Alice moved to Berlin')"
    )

    calls: list[int] = []

    def stubborn(check: Any) -> None:  # keeps the plan it had
        calls.append(len(check.stale))

    with pytest.raises(StalePlanError, match="still stale after one replan: memory 1 .*superseded by record 2"):
        f.guard("trip", replan=stubborn)
    assert calls == [1]

    def refresh(check: Any) -> None:
        calls.append(len(check.stale))
        f.derive("trip", "A", "meet Alice in Berlin", {}, memories=[berlin])

    assert f.guard("trip", replan=refresh).current
    assert calls == [1, 1]
    assert [(link.key, link.version) for link in f.frontier("trip")] == [(memory_key(berlin), berlin)]


def test_another_owners_supersession_stales_a_plan_on_the_old_record(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    f.derive("trip", "A", "meet Alice in Paris", {}, memories=[paris])
    berlin = mstore.deposit("B", ["Alice moved to Berlin"], round=2).ids[0]
    assert [m.id for m in mstore.recall("A", "Alice", k=5)] == [paris]  # still current for A
    [s] = f.check("trip").stale
    assert (s.recorded, s.head) == (paris, berlin) and "superseded by record" in s.reason


def test_a_deleted_memory_stales_the_plan_with_its_own_reason(mstore):
    f = mstore.fence
    rid = mstore.deposit("A", ["Bob likes tea"], round=1).ids[0]
    f.publish("menu", "A", "tea and cake")
    f.derive("party", "A", "serve tea", {"menu": 1}, memories=[rid])
    mstore.forget("A", rid)
    c = f.check("party")
    assert [(s.key, s.head) for s in c.stale] == [(memory_key(rid), None)]
    assert c.stale[0].reason == f"memory {rid} ('Bob likes tea') was deleted (no owner holds it any more)"


def test_memory_links_are_durable_inputs_of_the_plan_version(tmp_path):
    path = os.fspath(tmp_path / "store")
    with open_store(path) as s:
        a, b = s.deposit("A", ["Alice lives in Paris", "Bob likes tea"], round=1).ids
        s.fence.publish("menu", "A", "tea")
        s.fence.derive("plan", "P", "the plan", {"menu": 1}, memories=[b, a, b])
    with open_store(path) as s:
        lin = s._handles().lineage
        [(version, _kind, _digest, value, inputs)] = lin.versions("plan")
        assert (version, value) == (1, b"the plan")
        assert sorted(inputs) == sorted([("menu", 1), (memory_key(b), b), (memory_key(a), a)])
        assert s.fence.value(memory_key(a)) == b"Alice lives in Paris"
        assert s.fence.owner(memory_key(a)) == MEMORY_OWNER
        assert s.fence.check("plan").current and s.fence.verify() == []
        s.deposit("B", ["Alice moved to Berlin"], round=2)
        assert [x.key for x in s.fence.check("plan").stale] == [memory_key(a)]


def test_a_plan_above_a_plan_sees_the_memory_beneath(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    f.derive("route", "A", "fly to CDG", {}, memories=[paris])
    f.derive("budget", "A", "300 EUR", {"route": 1})
    mstore.deposit("A", ["Alice moved to Berlin"], round=2)
    assert [s.key for s in f.check("budget").stale] == [memory_key(paris)]


BAD_MEMORIES = [
    ([99], ValueError, r"memories\[0\]: record 99 is not a live record of this store"),
    ([1, 0], ValueError, r"memories\[1\]: record 0 is not a live record"),
    ([1, -3], ValueError, r"memories\[1\]: record -3 is not a live record"),
    ([True], TypeError, r"memories\[0\] must be a record id"),
    (["1"], TypeError, r"memories\[0\] must be a record id"),
    ("1", TypeError, "memories must be an iterable of record ids"),
    (1, TypeError, "memories must be an iterable of record ids"),
]


def test_bad_memories_are_refused_and_nothing_is_written(mstore):
    mstore.deposit("A", ["Alice lives in Paris"], round=1)
    f = mstore.fence
    f.publish("menu", "A", "tea")
    before = f.keys()
    for memories, error, match in BAD_MEMORIES:
        with pytest.raises(error, match=match):
            f.derive("plan", "A", "x", {"menu": 1}, memories=memories)
        assert f.keys() == before
    # The links go in the plan version's transaction: a plan refused for its
    # inputs leaves no memory link behind.
    with pytest.raises(UnknownKeyError):
        f.derive("plan", "A", "x", {"menu": 2}, memories=[1])
    assert f.keys() == before


def test_superseded_and_deleted_records_are_not_live(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    berlin = mstore.deposit("A", ["Alice moved to Berlin"], round=2).ids[0]
    tea = mstore.deposit("A", ["Bob likes tea"], round=2).ids[0]
    mstore.forget("A", tea)
    with pytest.raises(ValueError, match=f"record {paris} is not a live record: record {berlin} superseded it"):
        f.derive("plan", "A", "x", {}, memories=[berlin, paris])
    with pytest.raises(ValueError, match=f"record {tea} is not a live record"):
        f.derive("plan", "A", "x", {}, memories=[tea])
    assert f.keys() == []


def test_memory_names_are_reserved(mstore):
    f = mstore.fence
    rid = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    with pytest.raises(ValueError, match="form of a memory link"):
        f.publish(memory_key(rid), "A", "x")
    with pytest.raises(ValueError, match="form of a memory link"):
        f.derive(memory_key(rid), "A", "x", {}, memories=[rid])
    with pytest.raises(ValueError, match="reserved"):
        f.publish("k", MEMORY_OWNER, "x")
    with pytest.raises(ValueError, match="not a memory link of owner 'A'"):
        f.observe(memory_key(rid), "A", rid, "x")
    with pytest.raises(ValueError, match="observe memory:7@A"):
        f.observe(memory_key(rid, "A"), "A", 7, "x")
    with pytest.raises(ValueError, match="reserved"):
        HeadsServer(mstore, MEMORY_OWNER)
    with pytest.raises(ValueError, match="inputs is empty"):
        f.derive("plan", "A", "x", {}, memories=[])
    assert f.keys() == []


def test_a_heads_source_is_never_asked_for_this_stores_memories(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    f.observe("budget", "bob", 1, "300")
    f.derive("trip", "A", "meet Alice", {"budget": 1}, memories=[paris])
    asked: list[tuple[str, list[str]]] = []

    def heads(owner: str, keys: list[str]) -> dict[str, int]:
        asked.append((owner, keys))
        return {"budget": 1}

    assert f.check("trip", heads=heads).current
    mstore.deposit("A", ["Alice moved to Berlin"], round=2)
    c = f.check("trip", heads=heads)
    assert [s.key for s in c.stale] == [memory_key(paris)] and "('Alice moved to Berlin')" in c.stale[0].reason
    assert asked == [("bob", ["budget"])] * 2


def test_memory_links_inside_a_replan_are_kept_only_if_it_returns(mstore):
    f = mstore.fence
    paris = mstore.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
    f.derive("trip", "A", "Paris", {}, memories=[paris])
    berlin = mstore.deposit("A", ["Alice moved to Berlin"], round=2).ids[0]

    def fails(check: Any) -> None:
        f.derive("trip", "A", "Berlin", {}, memories=[berlin])
        raise RuntimeError("no flights")

    with pytest.raises(StalePlanError, match="no flights"):
        f.guard("trip", replan=fails)
    assert memory_key(berlin) not in f.keys() and f.head("trip") == 1


def test_memory_links_survive_export_and_import(tmp_path):
    from agentsensus.io.export import export_jsonl
    from agentsensus.io.importer import import_jsonl

    buf = io.StringIO()
    with open_store(os.fspath(tmp_path / "a")) as s:
        paris = s.deposit("A", ["Alice lives in Paris"], round=1).ids[0]
        s.fence.derive("trip", "A", "meet Alice in Paris", {}, memories=[paris])
        export_jsonl(s, buf)
    import_jsonl(buf.getvalue().splitlines(), os.fspath(tmp_path / "b"))
    with open_store(os.fspath(tmp_path / "b")) as s:
        assert s.fence.check("trip").current
        berlin = s.deposit("B", ["Alice moved to Berlin"], round=2).ids[0]
        assert [(x.key, x.head) for x in s.fence.check("trip").stale] == [(memory_key(paris), berlin)]
