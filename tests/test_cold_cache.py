"""A store read on a cold page cache answers as it does warm: the prefetching
of cpp/src/lmdb/prefetch.cpp (helper threads fetching a search's candidates, the
background read of data.mdb after open) only changes what is resident."""

from __future__ import annotations

import os

import numpy as np
import pytest
from agentsensus import Store

DIM = 16
N, K = 2000, 6
WIDTH = 8  # expansion_search: at this width and k the "all" owner is past a scan's cost, so it searches the graph


def evict(path: str) -> None:
    """Drops the store's files from the page cache (their clean pages; no root
    needed), where the system offers it."""
    advise = getattr(os, "posix_fadvise", None)
    for name in ("data.mdb", "index.usearch"):
        fd = os.open(os.path.join(path, name), os.O_RDONLY)
        try:
            os.fsync(fd)
            if advise:
                advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def answers(s: Store, queries: np.ndarray) -> list:
    out = []
    for owner in ("all", "few"):
        for q in queries:
            out.append([(r.id, r.score, r.via, r.text) for r in s.recall(owner, q, k=K)])
    return out


@pytest.mark.slow
def test_recall_on_an_evicted_store_matches_warm(tmp_path):
    path = str(tmp_path / "s")
    rng = np.random.default_rng(7)
    vs = rng.standard_normal((N, DIM)).astype(np.float32)
    vs /= np.linalg.norm(vs, axis=1, keepdims=True)
    with Store(path, dim=DIM, sync=False, exact_cutoff=0, expansion_search=WIDTH) as s:
        for start in range(0, N, 1000):
            s.deposit("all", [f"r{i}" for i in range(start, start + 1000)], vs[start : start + 1000])
        few = list(range(0, N, 25))
        s.deposit("few", [f"f{i}" for i in few], vs[few])
    queries = rng.standard_normal((40, DIM)).astype(np.float32)
    with Store(path, create=False, readonly=True, exact_cutoff=0, expansion_search=WIDTH) as s:
        warm = answers(s, queries)
    assert all(len(a) >= K for a in warm)
    for readonly in (True, False):
        evict(path)
        with Store(path, create=False, readonly=readonly, exact_cutoff=0, expansion_search=WIDTH) as s:
            assert answers(s, queries) == warm


def test_close_right_after_open_on_an_evicted_store(tmp_path):
    # The background read of data.mdb stops at close (between chunks), however
    # little of it is done; the store opens again clean.
    path = str(tmp_path / "s")
    rng = np.random.default_rng(3)
    vs = rng.standard_normal((500, DIM)).astype(np.float32)
    with Store(path, dim=DIM, sync=False) as s:
        s.deposit("a", [f"r{i}" for i in range(500)], vs)
    for _ in range(5):
        evict(path)
        Store(path, create=False).close()
    with Store(path, create=False) as s:
        assert s.verify() == []
        assert len(s.recall("a", vs[0], k=3)) >= 3
