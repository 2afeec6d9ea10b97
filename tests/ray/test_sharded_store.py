"""ShardedStore over three StoreActors on a two-node cluster: on a world
where no event crosses places, it gives what one store gives (records,
merges, owner sets, recall with its edges); actors land on the node their
resource names."""

from __future__ import annotations

import os
from typing import Iterator

import numpy as np
import pytest
import ray
from agentsensus import Store, judges
from agentsensus.ray import RemoteStore, ShardedStore, StoreActor, node_resource, on_node, place_shard

pytestmark = pytest.mark.slow  # a Ray cluster

DIM = 8
NODES = [{node_resource("a"): 1}, {node_resource("b"): 1}]
PLACES = ["harbour", "market", "chapel", "mill", "gate", "square"]


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def world(seed: int) -> list[list[tuple[str, str, list[str], np.ndarray]]]:
    """Rounds of (place, witness, statements, vectors): each event happens at
    one place and only its witnesses, who stand there, report it; a repeated
    report is the same statement (the exact judge merges it)."""
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(4):
        batch = []
        for _ in range(6):
            p = int(rng.integers(len(PLACES)))
            events = sorted({int(e) for e in rng.integers(0, 5, size=int(rng.integers(1, 3)))})
            witness = f"w{p}-{int(rng.integers(3))}"
            texts = [f"at the {PLACES[p]}: event {e}" for e in events]
            batch.append((PLACES[p], witness, texts, np.stack([unit(1000 * p + e) for e in events])))
        rounds.append(batch)
    return rounds


@pytest.fixture(scope="module")
def shards(cluster, tmp_path_factory) -> Iterator[list]:
    base = tmp_path_factory.mktemp("shards")
    actors = [
        StoreActor.options(**on_node("ab"[i % 2])).remote(os.fspath(base / f"shard{i}"), dim=DIM, judge=judges.exact)
        for i in range(3)
    ]
    yield actors
    for a in actors:
        RemoteStore(a).shutdown()


def view(m) -> tuple:
    return (m.text, tuple(sorted(m.owners)), m.round, m.via, None if m.score is None else round(m.score, 5))


def test_actors_are_placed_on_the_node_their_resource_names(shards) -> None:
    nodes = {n["Resources"].get(node_resource("a")) and "a" or "b": n["NodeID"] for n in ray.nodes() if n["Alive"]}
    for i, a in enumerate(shards):
        assert ray.get(a.info.remote())["node"] == nodes["ab"[i % 2]]


def test_sharded_recall_equals_one_store_where_no_event_crosses_places(shards, tmp_path) -> None:
    sharded = ShardedStore(shards)
    rounds = world(seed=3)
    with Store(os.fspath(tmp_path / "one"), dim=DIM, judge=judges.exact) as one:
        for r, batch in enumerate(rounds):
            items = [(w, texts, vecs) for _, w, texts, vecs in batch]
            got = sharded.deposit_many(items, places=[p for p, *_ in batch], round=r)
            want = one.deposit_many(items, round=r)
            assert [d.merged for d in got] == [d.merged for d in want]
        s1, s2 = one.stats(), sharded.stats()
        assert (s2.records, s2.deposits, s2.merges, s2.shared, s2.linked, s2.max_owners, s2.agents) == (
            s1.records,
            s1.deposits,
            s1.merges,
            s1.shared,
            s1.linked,
            s1.max_owners,
            s1.agents,
        )
        assert s1.merges > 0 and s1.linked > 0  # the world exercises merges and edges
        assert sorted((m.kept, m.owner, m.round) for m in sharded.merges()) == sorted(
            (m.kept, m.owner, m.round) for m in one.merges()
        )
        witnesses = sorted({w for batch in rounds for _, w, _, _ in batch})
        queries = [(w, unit(q)) for w in witnesses for q in (0, 1002, 3001)]
        for k in (1, 3):
            got_many = sharded.recall_many(queries, k=k)
            for (w, q), got in zip(queries, got_many):
                want = one.recall(w, q, k=k)
                assert [view(m) for m in got] == [view(m) for m in want]
                assert [view(m) for m in sharded.recall(w, q, k=k, expand=False)] == [
                    view(m) for m in one.recall(w, q, k=k, expand=False)
                ]
        for w in witnesses:
            assert sorted(sharded.get(i).text for i in sharded.owned(w)) == sorted(
                one.get(i).text for i in one.owned(w)
            )


def test_deposits_go_to_their_places_shard_and_the_directory_survives_a_new_client(shards) -> None:
    sharded = ShardedStore(shards, route=lambda owner, statements: statements[0].split(":")[0])
    d = sharded.deposit("visitor", ["quay: a ship came in"], unit(77)[None, :])
    s = place_shard("quay", 3)
    assert d.ids[0] % 3 == s and sharded.get(d.ids[0]).text == "quay: a ship came in"
    assert ray.get(shards[s].owned.remote("visitor")) == [d.ids[0] // 3]
    again = ShardedStore(shards)  # rebuilt from the shards' owner lists
    assert again.directory["visitor"] == {s}
    assert [m.text for m in again.recall("visitor", unit(77), k=1)] == ["quay: a ship came in"]
    sharded.forget("visitor", d.ids[0])
    with pytest.raises(KeyError):
        again.get(d.ids[0])


def test_a_deposit_without_a_place_or_route_is_refused_with_nothing_written(shards) -> None:
    sharded = ShardedStore(shards)
    before = sharded.stats()
    with pytest.raises(ValueError, match="place is required"):
        sharded.deposit("x", ["somewhere"], unit(1)[None, :])
    with pytest.raises(ValueError, match="places has 1 entries for 2 items"):
        sharded.deposit_many([("x", ["a"], unit(1)[None, :]), ("y", ["b"], unit(2)[None, :])], places=["gate"])
    assert sharded.stats() == before
