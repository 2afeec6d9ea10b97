"""Planfence check of a 128-input plan over 5 owners (bar: < 50 us of engine
time, docs/performance.md), answered from the same store.

    pytest bench/test_fence_bench.py --benchmark-only

The store is built in a temporary directory in about a second.
"""

from __future__ import annotations

import os

import pytest
from agentsensus import Store
from fence_timing import best_check_time_us

OWNERS = [f"owner-{j}" for j in range(5)]
KEYS = [f"input/{j:03d}" for j in range(128)]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    # The plan of bench/planfence_experiments.py:engine_time: every owner's
    # keys interleaved with the others' in key order.
    s = Store(os.fspath(tmp_path_factory.mktemp("fence") / "s"), dim=1, sync=False)
    f = s.fence
    for j, k in enumerate(KEYS):
        f.publish(k, OWNERS[j % 5], f"value {j}")
    f.derive("plan", "planner", "plan", {k: 1 for k in KEYS})
    c = f.check("plan")
    assert c.current and c.owners_asked == 5 and len(f.frontier("plan")) == 128
    yield s
    s.close()


def test_check_128_inputs_5_owners_engine(benchmark, store):
    # The _core call (frontier, 5 encoded queries, 5 answers, verdict), plus
    # its best of 50 batches of 200 as extra info, the way
    # planfence_experiments.py reports it (fence_timing.py).
    benchmark(store._handles().lineage.check_local, "plan", None)
    benchmark.extra_info["engine_us_best_of_50x200"] = round(best_check_time_us(store, "plan"), 2)


def test_check_128_inputs_5_owners_python(benchmark, store):
    # Fence.check: argument checks and the Check/Stale objects on top.
    benchmark(store.fence.check, "plan")


@pytest.fixture(scope="module")
def stale_store(tmp_path_factory):
    # The same plan, then one of its inputs moves to new content.
    s = Store(os.fspath(tmp_path_factory.mktemp("fence-stale") / "s"), dim=1, sync=False)
    f = s.fence
    for j, k in enumerate(KEYS):
        f.publish(k, OWNERS[j % 5], f"value {j}")
    f.derive("plan", "planner", "plan", {k: 1 for k in KEYS})
    f.publish(KEYS[7], OWNERS[7 % 5], "revised")
    c = f.check("plan")
    assert not c.current and len(c.stale) == 1
    yield s
    s.close()


def test_check_128_inputs_one_moved_python(benchmark, stale_store):
    benchmark(stale_store.fence.check, "plan")
