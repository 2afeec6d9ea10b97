"""Planfence owners as actors: a planner's check asks each owner's named
StoreActor over Ray calls (RayHeadsClient); a revision is caught, and a dead
owner actor makes the check not current, naming that owner."""

from __future__ import annotations

import os
import time
from typing import Iterator

import pytest
import ray
from agentsensus import StalePlanError, Store
from agentsensus.ray import RayHeadsClient, RemoteStore, StoreActor, owner_actor_name

pytestmark = pytest.mark.slow  # a Ray cluster

OWNERS = {"alice": ["req", "scope"], "bob": ["budget"], "carol": ["site"], "dave": ["crew"]}


@pytest.fixture
def owners(cluster, tmp_path) -> Iterator[dict[str, RemoteStore]]:
    out = {}
    for o, keys in OWNERS.items():
        actor = StoreActor.options(name=owner_actor_name(o)).remote(os.fspath(tmp_path / o), dim=4)
        out[o] = RemoteStore(actor)
        for k in keys:
            out[o].fence.publish(k, o, f"{k} v1")
    yield out
    for s in out.values():
        try:
            s.shutdown()
        except Exception:
            ray.kill(s.actor, no_restart=True)  # already dead: make sure


def wait_dead(actor, seconds: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """``ray.kill`` returns before the actor is gone: wait (bounded) until a call to it fails."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=5)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return
        time.sleep(0.1)
    raise AssertionError("the killed actor still answers")


def plan(store: Store, owners: dict[str, RemoteStore]) -> None:
    f = store.fence
    for o, keys in OWNERS.items():
        for k in keys:
            v = owners[o].fence.head(k)
            f.observe(k, o, v, owners[o].fence.value(k, v))
    f.derive("plan", "planner", "the plan", {k: f.head(k) for keys in OWNERS.values() for k in keys})


def test_a_check_asks_every_owner_actor_and_catches_a_revision(owners, tmp_path) -> None:
    client = RayHeadsClient.named(OWNERS)
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store:
        plan(store, owners)
        c = store.fence.check("plan", heads=client)
        assert c.current and c.owners_asked == 4 and c.bytes > 0
        owners["bob"].fence.publish("budget", "bob", "budget v1")  # same content: current by digest
        assert store.fence.check("plan", heads=client).current
        owners["carol"].fence.publish("site", "carol", "the site moved")
        c = store.fence.check("plan", heads=client)
        assert not c.current and [(s.key, s.owner, s.recorded, s.head) for s in c.stale] == [("site", "carol", 1, 2)]
        c = store.fence.guard("plan", heads=client, replan=lambda c: plan(store, owners))
        assert c.current


def test_a_dead_owner_actor_blocks_the_check_naming_it(owners, tmp_path) -> None:
    client = RayHeadsClient.named(OWNERS, timeout=20)
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store:
        plan(store, owners)
        assert store.fence.check("plan", heads=client).current
        ray.kill(owners["dave"].actor, no_restart=True)
        wait_dead(owners["dave"].actor)
        c = store.fence.check("plan", heads=client)
        assert not c.current
        assert [(s.key, s.owner) for s in c.stale] == [("crew", "dave")]
        assert "owner 'dave'" in c.stale[0].reason and "dead" in c.stale[0].reason
        with pytest.raises(StalePlanError, match="owner 'dave'"):
            store.fence.guard("plan", heads=client, replan=lambda c: None)


def test_an_owner_with_no_actor_is_not_current(owners, tmp_path) -> None:
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store:
        plan(store, owners)
        client = RayHeadsClient({o: owners[o].actor for o in ("alice", "bob", "carol")})
        c = store.fence.check("plan", heads=client)
        assert not c.current and {s.owner for s in c.stale} == {"dave"}
        assert "no actor" in c.stale[0].reason


def test_a_check_can_run_inside_an_actor_with_the_client(owners, tmp_path) -> None:
    planner = RemoteStore(StoreActor.remote(os.fspath(tmp_path / "remote-planner"), dim=4))
    try:
        f = planner.fence
        for o, keys in OWNERS.items():
            for k in keys:
                f.observe(k, o, 1, f"{k} v1")
        f.derive("plan", "planner", "p", {k: 1 for keys in OWNERS.values() for k in keys})
        assert f.check("plan", heads=RayHeadsClient.named(OWNERS)).current
    finally:
        planner.shutdown()
