"""The frontier walk on crafted lineage graphs: which links a plan's head
reaches (the walk), and how they come out grouped by owner (owners by name,
each owner's links by key and version, every (key, version) once). The
random graphs of test_fence_properties.py check the same against a
reference walk; these pin the cases by name."""

from __future__ import annotations

import pytest
from agentsensus import Link


def _kv(links: list[Link]) -> list[tuple[str, str, int]]:
    return [(l.owner, l.key, l.version) for l in links]


def test_frontier_follows_derived_inputs_down_to_base_inputs(store):
    f = store.fence
    f.publish("req", "alice", "r")
    f.publish("sched", "carol", "s")
    f.publish("budget", "bob", "b")
    f.derive("logistics", "dave", "l", {"req": 1, "sched": 1})
    f.derive("plan", "dave", "p", {"logistics": 1, "budget": 1})
    got = f.frontier("plan")
    assert [(l.key, l.owner, l.version) for l in got] == [
        ("req", "alice", 1),
        ("budget", "bob", 1),
        ("sched", "carol", 1),
        ("logistics", "dave", 1),
    ]
    assert all(isinstance(l, Link) for l in got)
    assert got[0].digest == f.frontier("logistics")[0].digest and len(got[0].digest) == 16


def test_scope_keeps_keys_in_scope_and_everything_beneath_a_derived_key_in_scope(store):
    f = store.fence
    f.publish("req", "alice", "r")
    f.publish("sched", "carol", "s")
    f.publish("budget", "bob", "b")
    f.derive("logistics", "dave", "l", {"req": 1, "sched": 1})
    f.derive("plan", "dave", "p", {"logistics": 1, "budget": 1})
    assert {l.key for l in f.frontier("plan", scope=["budget"])} == {"budget"}
    assert {l.key for l in f.frontier("plan", scope=["logistics"])} == {"logistics", "req", "sched"}
    assert f.frontier("plan", scope=[]) == []
    f.publish("budget", "bob", "b2")
    assert f.check("plan", scope=["logistics"]).current
    assert not f.check("plan", scope=["budget"]).current


def test_an_input_reached_along_two_paths_is_listed_once(store):
    f = store.fence
    f.publish("req", "alice", "r")
    f.derive("a", "dave", "a", {"req": 1})
    f.derive("b", "dave", "b", {"req": 1})
    f.derive("plan", "dave", "p", {"a": 1, "b": 1, "req": 1})
    assert _kv(f.frontier("plan")) == [("alice", "req", 1), ("dave", "a", 1), ("dave", "b", 1)]


def test_a_plan_may_link_to_an_older_version_of_itself(store):
    f = store.fence
    f.publish("req", "alice", "r")
    f.derive("plan", "dave", "p1", {"req": 1})
    f.derive("plan", "dave", "p2", {"plan": 1, "req": 1})
    assert {(l.key, l.version) for l in f.frontier("plan")} == {("plan", 1), ("req", 1)}
    # plan moved to 2 since version 2 recorded plan@1: the walk terminates and reports it
    c = f.check("plan")
    assert not c.current and [s.key for s in c.stale] == ["plan"]


def test_links_met_deeper_are_sorted_into_their_owners_key_order(store):
    # The walk meets alice's "m" at the top and her "a" one level down: the
    # grouping puts "a" first, though the walk found it second.
    f = store.fence
    f.publish("m", "alice", "m")
    f.publish("a", "alice", "a")
    f.publish("z", "bob", "z")
    f.derive("mid", "dave", "mid", {"a": 1, "z": 1})
    f.derive("plan", "dave", "p", {"m": 1, "mid": 1})
    assert _kv(f.frontier("plan")) == [
        ("alice", "a", 1),
        ("alice", "m", 1),
        ("bob", "z", 1),
        ("dave", "mid", 1),
    ]


def test_two_versions_of_one_input_are_both_listed_in_version_order(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.publish("req", "alice", "r2")
    f.derive("old", "dave", "o", {"req": 1})
    f.derive("plan", "dave", "p", {"old": 1, "req": 2})
    assert _kv(f.frontier("plan")) == [("alice", "req", 1), ("alice", "req", 2), ("dave", "old", 1)]
    c = f.check("plan")
    assert [(s.key, s.recorded, s.head) for s in c.stale] == [("req", 1, 2)]


def test_a_node_reached_first_out_of_scope_then_in_scope_is_walked_again(store):
    # plan -> {x, w}; w -> {x}; x -> {y}; y -> {base}. With scope ["w"], x is
    # out of scope when reached from plan and in scope when reached from w:
    # everything beneath w comes out, once, whichever path the walk took first.
    f = store.fence
    f.publish("base", "alice", "b")
    f.derive("y", "dave", "y", {"base": 1})
    f.derive("x", "dave", "x", {"y": 1})
    f.derive("w", "erin", "w", {"x": 1})
    f.derive("plan", "dave", "p", {"w": 1, "x": 1})
    want = [("alice", "base", 1), ("dave", "x", 1), ("dave", "y", 1), ("erin", "w", 1)]
    assert _kv(f.frontier("plan", scope=["w"])) == want
    assert _kv(f.frontier("plan")) == want
    assert _kv(f.frontier("plan", scope=["y"])) == [("alice", "base", 1), ("dave", "y", 1)]


def test_a_plan_with_no_inputs_in_scope_is_current_and_asks_no_one(store):
    f = store.fence
    f.publish("req", "alice", "r")
    f.derive("plan", "dave", "p", {"req": 1})
    c = f.check("plan", scope=["elsewhere"])
    assert c.current and c.owners_asked == 0 and c.bytes == 0


def test_a_remote_check_asks_each_owner_once_for_its_frontier_keys(store):
    # prepare groups the same frontier: each owner is asked once, for
    # exactly its keys, and the verdict matches the local check.
    f = store.fence
    owners = [f"owner-{j:02d}" for j in range(11)]  # more than 8: answers are merged by one sort
    for j in range(33):
        f.publish(f"in/{j:02d}", owners[j % 11], f"v{j}")
    f.derive("mid", "planner", "m", {f"in/{j:02d}": 1 for j in range(0, 33, 2)})
    f.derive("plan", "planner", "p", {"mid": 1, **{f"in/{j:02d}": 1 for j in range(1, 33, 2)}})
    asked: list[tuple[str, list[str]]] = []

    def heads(owner: str, keys: list[str]) -> dict[str, int]:
        asked.append((owner, keys))
        return {k: f.head(k) for k in keys}

    c = f.check("plan", heads=heads)
    assert c.current and c.owners_asked == 12
    by_owner: dict[str, list[str]] = {}
    for l in f.frontier("plan"):
        by_owner.setdefault(l.owner, []).append(l.key)
    assert sorted(asked) == sorted(by_owner.items())
    f.publish("in/04", owners[4], "moved")
    remote, local = f.check("plan", heads=heads), f.check("plan")
    assert [(s.key, s.head) for s in remote.stale] == [(s.key, s.head) for s in local.stale] == [("in/04", 2)]
    assert remote.bytes == local.bytes


def test_frontier_of_an_unknown_key_raises(store):
    with pytest.raises(KeyError, match="nope"):
        store.fence.frontier("nope")
