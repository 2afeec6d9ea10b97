"""Faults: the store actor's node is killed in the middle of a run on a local
cluster, a replacement node carries the same resource (and, on this one
machine, the same disk), the actor restarts there and the run goes on; every
acknowledged batch is in the store exactly once (batch keys), and resending
all of them changes nothing."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional

import numpy as np
import pytest
from agentsensus import JudgeRequest, Store, judges
from agentsensus.ray import RemoteStore, StoreActor, node_resource, on_node
from agentsensus.ray.loopback import LOOPBACK
from conftest import pickle_by_value

pytestmark = pytest.mark.slow  # a Ray cluster

DIM = 8
NODES = [{}, {node_resource("disk"): 1}]
#: Health checks tuned so that a dead node is noticed in about 2 s (the default takes about 15 s).
SYSTEM_CONFIG = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 3,
}
pickle_by_value(__name__)


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def batch(r: int) -> list[tuple[str, list[str], np.ndarray]]:
    """Round r: four witnesses, each reporting two of the events 0..5 (repeats
    merge, by their exact text), and the first also the round's own news
    (which the judge is asked about: every record is a candidate)."""
    rng = np.random.default_rng(r)
    out = []
    for w in range(4):
        events = sorted({int(e) for e in rng.integers(0, 6, size=2)})
        texts, vecs = [f"event {e}" for e in events], [unit(e) for e in events]
        if w == 0:
            texts.append(f"news of round {r}")
            vecs.append(unit(100 + r))
        out.append((f"w{w}", texts, np.stack(vecs)))
    return out


def slow_exact(requests: list[JudgeRequest]) -> list[Optional[int]]:
    """The exact judge, slowly: the node dies while it thinks."""
    time.sleep(3)
    return judges.exact(requests)


def disk_node(cluster: Any) -> Any:
    import ray

    nid = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get(node_resource("disk")))
    return next(n for n in cluster.list_all_nodes() if n.node_id == nid)


def test_a_node_kill_mid_run_loses_and_duplicates_no_acknowledged_batch(cluster, tmp_path) -> None:
    import ray

    path = os.fspath(tmp_path / "world")
    actor = StoreActor.options(**on_node("disk"), max_restarts=2).remote(
        path, dim=DIM, judge=judges.exact, min_similarity=-1.0, checkpoint_every=3
    )
    store = RemoteStore(actor, timeout=120, retry_for=120)
    first_pid = ray.get(actor.info.remote())["pid"]
    acked: dict[int, list[Any]] = {}
    rounds, kill_at = 10, 5
    for r in range(rounds):
        if r != kill_at:
            acked[r] = store.deposit_many(batch(r), round=r, batch_key=f"run/round-{r}")
            continue
        done: dict[str, Any] = {}
        call = threading.Thread(
            target=lambda: done.update(
                out=store.deposit_many(batch(r), round=r, judge=slow_exact, batch_key=f"run/round-{r}")
            )
        )
        call.start()
        time.sleep(1.0)  # the call is in the actor, judging
        victim = disk_node(cluster)
        cluster.remove_node(victim, allow_graceful=False)  # SIGKILL: raylet, object store, the actor's worker
        cluster.add_node(
            node_ip_address=LOOPBACK, num_cpus=1, object_store_memory=100 << 20, resources={node_resource("disk"): 1}
        )
        call.join(timeout=300)
        assert not call.is_alive() and "out" in done
        acked[r] = done["out"]
    info = ray.get(actor.info.remote())
    assert info["pid"] != first_pid and info["node"] == disk_node(cluster).node_id  # restarted on the new node

    # The peer: every batch once, no faults.
    with Store(os.fspath(tmp_path / "peer"), dim=DIM, judge=judges.exact, min_similarity=-1.0) as peer:
        want = [peer.deposit_many(batch(r), round=r) for r in range(rounds)]
        assert [acked[r] for r in range(rounds)] == want
        assert store.stats() == peer.stats() and list(store.merges()) == list(peer.merges())
    before = store.stats()
    for r in range(rounds):  # a client that never saw its acknowledgements resends every batch
        assert store.deposit_many(batch(r), round=r, batch_key=f"run/round-{r}") == acked[r]
    assert store.stats() == before and store.verify() == []
    store.shutdown()
