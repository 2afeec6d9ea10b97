"""Recall in a store whose neighbourhoods are crowded (cpp/src/index/crowd_gauge.hpp):
most queries' k-th best lies near the edge of the graph search, so the plan
starts at the crowded rule's wider width instead of searching twice. What it
answers must still be the owner's near-exact best, the same on every pass,
from every thread and after a reopen (the verdict is measured from the
store, not learned from the queries served)."""

from __future__ import annotations

import numpy as np
import pytest
from agentsensus import Store
from helpers import in_threads

# At most 4096 records: the graph is grown one insert at a time, so it is the
# same graph in every run. expansion_search 8 puts the wider search (32
# candidates, 3,200 scanned vectors' worth) under the cost of scanning the
# 4,000 owned records, so recall takes the graph search at this size.
N, DIM, CLUSTERS, K = 4000, 16, 40, 5
OPTS = {"dim": DIM, "exact_cutoff": 16, "expansion_search": 8, "candidates": 0, "lexical_candidates": 0}


def _corpus() -> np.ndarray:
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
    # Tight clusters of 100: a query's 5th best and the search's 32nd
    # candidate lie a few hundredths apart, under the rule's 0.1.
    vs = centres[np.arange(N) % CLUSTERS] + 0.08 * rng.standard_normal((N, DIM)).astype(np.float32)
    return (vs / np.linalg.norm(vs, axis=1, keepdims=True)).astype(np.float32)


def _queries(vs: np.ndarray, m: int) -> np.ndarray:
    rng = np.random.default_rng(12)
    q = vs[rng.integers(0, N, m)] + 0.05 * rng.standard_normal((m, DIM)).astype(np.float32)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("crowded") / "s")
    vs = _corpus()
    with Store(path, **OPTS) as s:
        items = [("all", [f"r{j}" for j in range(i, i + 4)], vs[i : i + 4]) for i in range(0, N, 4)]
        s.deposit_many(items)
        # Record ids follow the deposit order (1-based); checked on a sample.
        assert all(s.get(j + 1).text == f"r{j}" for j in range(0, N, 97))
    return path, vs


def _hits(s: Store, q: np.ndarray) -> list[tuple[int, float]]:
    return [(m.id, m.score) for m in s.recall("all", q, k=K, expand=False)]


@pytest.mark.slow
def test_crowded_recall_is_near_exact_and_repeatable(crowded):
    path, vs = crowded
    qs = _queries(vs, 60)
    truth = [set(np.argsort(-(vs @ q), kind="stable")[:K] + 1) for q in qs]
    with Store(path, **OPTS) as s:
        first = [_hits(s, q) for q in qs]
        again = [_hits(s, q) for q in qs]
    with Store(path, readonly=True, **{k: v for k, v in OPTS.items() if k != "dim"}) as s:
        reopened = [_hits(s, q) for q in qs]
    assert first == again == reopened
    got = [{i for i, _ in h} for h in first]
    recall = np.mean([len(g & t) / K for g, t in zip(got, truth)])
    # HNSW at the wider width: the graph's own search keeping 32 candidates,
    # re-scored, finds 0.917 of the exact top 5 here, at the narrow width
    # (15) 0.833; a plan that searched narrow only would fall under 0.9.
    assert recall >= 0.9, recall
    # The scores are exact (re-scored from the stored f32 vectors).
    for q, h in zip(qs, first):
        for i, score in h:
            assert score == pytest.approx(float(vs[i - 1] @ q), abs=1e-5)


def test_threads_recall_what_one_thread_recalls_in_a_crowded_store(crowded):
    path, vs = crowded
    qs = _queries(vs, 40)
    with Store(path, readonly=True, **{k: v for k, v in OPTS.items() if k != "dim"}) as s:
        # Released together: the first graph recall of this open, and so the
        # verdict, is measured from every thread at once.
        got = in_threads(3, lambda t: [_hits(s, q) for q in qs])
        assert got[0] == got[1] == got[2] == [_hits(s, q) for q in qs]
