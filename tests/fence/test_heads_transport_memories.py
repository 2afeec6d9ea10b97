"""Memories of another store over the heads transport: a planner links a
record of an owner's store (``memory:<id>@<owner>``) and its check asks that
store's heads server, which answers from its records. First in one process
(a real server on 127.0.0.1), then with the owner in its own process."""

from __future__ import annotations

import os
from typing import Any

import pytest
from agentsensus import StalePlanError, Store
from agentsensus.planfence import memory_key
from agentsensus.planfence.transport import HeadsClient, HeadsServer
from owner_client import Owner
from owner_process import moves

ONE = [[1.0, 0.0, 0.0, 0.0]]  # one vector for all: every record is a candidate


def link(store: Store, client: HeadsClient, owner: str, rid: int) -> str:
    """What a replan does: read the memory from its owner, observe it, link it."""
    key = memory_key(rid, owner)
    version, text = client.fetch(owner, key)
    store.fence.observe(key, owner, version, text)
    return key


def test_a_remote_memory_is_answered_by_the_store_that_holds_it(tmp_path):
    with (
        Store(os.fspath(tmp_path / "alice"), dim=4, judge=moves) as held,
        Store(os.fspath(tmp_path / "planner"), dim=4) as store,
        HeadsServer(held, "alice") as server,
        HeadsClient({"alice": server.url}, timeout=5) as client,
    ):
        paris = held.deposit("alice", ["Alice lives in Paris"], ONE, round=1).ids[0]
        assert client.fetch("alice", memory_key(paris, "alice")) == (paris, b"Alice lives in Paris")
        with pytest.raises(KeyError):
            client.fetch("alice", memory_key(paris + 10, "alice"))
        f = store.fence
        f.derive("trip", "planner", "meet Alice in Paris", {link(store, client, "alice", paris): paris})
        assert f.check("trip", heads=client).current
        assert f.check("trip").current  # without heads: what this store observed

        berlin = held.deposit("alice", ["Alice moved to Berlin"], ONE, round=2).ids[0]
        c = f.check("trip", heads=client)
        assert [(s.key, s.owner, s.recorded, s.head) for s in c.stale] == [
            (memory_key(paris, "alice"), "alice", paris, berlin)
        ]
        assert c.stale[0].reason == (
            f"memory {paris} ('Alice lives in Paris') at owner 'alice' was superseded by record {berlin} "
            "('Alice moved to Berlin')"
        )
        with pytest.raises(ValueError, match=f"observe memory:{berlin}@alice"):
            link(store, client, "alice", paris)  # the old link now reads as its successor

        def replan(check: Any) -> None:
            f.derive("trip", "planner", "meet Alice in Berlin", {link(store, client, "alice", berlin): berlin})

        assert f.guard("trip", heads=client, replan=replan).current
        held.forget("alice", berlin)
        c = f.check("trip", heads=client)
        assert [s.head for s in c.stale] == [None]
        assert "memory 2 ('Alice moved to Berlin') at owner 'alice' was deleted" in c.stale[0].reason
        with pytest.raises(StalePlanError, match="still stale after one replan: memory 2"):
            f.guard("trip", heads=client, replan=lambda check: None)


def test_a_server_answers_memories_only_as_the_owner_named_in_the_key(tmp_path):
    with (
        Store(os.fspath(tmp_path / "held"), dim=4) as held,
        HeadsServer(held, ["alice", "bob"]) as server,
        HeadsClient({"alice": server.url, "bob": server.url}, timeout=5) as client,
    ):
        rid = held.deposit("alice", ["Alice lives in Paris"], ONE, round=1).ids[0]
        assert client("alice", [memory_key(rid, "alice"), memory_key(rid, "bob"), memory_key(rid)]) == {
            memory_key(rid, "alice"): rid
        }
        with pytest.raises(KeyError):
            client.fetch("bob", memory_key(rid, "alice"))


@pytest.mark.slow  # an owner process over HTTP
def test_an_owner_process_supersession_stales_the_planners_plan(tmp_path):
    alice = Owner(os.fspath(tmp_path / "alice"), "alice")
    try:
        with Store(os.fspath(tmp_path / "planner"), dim=4) as store, HeadsClient({"alice": alice.url}) as client:
            f = store.fence
            noon = store.deposit("planner", ["Meet at noon"], ONE, round=1).ids[0]  # answered here, never sent
            paris = alice.say("deposit 1 Alice lives in Paris")
            f.derive("trip", "planner", "Paris", {link(store, client, "alice", paris): paris}, memories=[noon])
            c = f.check("trip", heads=client)
            assert c.current and c.owners_asked == 2
            berlin = alice.say("deposit 2 Alice moved to Berlin")
            c = f.check("trip", heads=client)
            assert [(s.key, s.recorded, s.head) for s in c.stale] == [(memory_key(paris, "alice"), paris, berlin)]
            assert "('Alice lives in Paris') at owner 'alice' was superseded by record" in c.stale[0].reason
            assert "('Alice moved to Berlin')" in c.stale[0].reason
            with pytest.raises(StalePlanError, match="still stale after one replan"):
                f.guard("trip", heads=client, replan=lambda check: None)

            def replan(check: Any) -> None:
                f.derive("trip", "planner", "Berlin", {link(store, client, "alice", berlin): berlin}, memories=[noon])

            assert f.guard("trip", heads=client, replan=replan).current
            alice.say(f"forget {berlin}")
            assert "was deleted" in f.check("trip", heads=client).stale[0].reason
    finally:
        alice.stop()
