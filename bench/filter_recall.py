"""Filtered recall (``where=``) against unfiltered recall and one raw
usearch search of the same index, in one run.

    python bench/filter_recall.py [--n 20000] [--dim 64] [--queries 200] [--k 5] [--workdir DIR] [--out FILE]

One owner holds N records of a clustered corpus, each with metadata
``{"bucket": i % 100, "half": i % 2}``; the queries come from another seed's
cluster centres, so they sit far from the records and have many near-ties
(a hard case for a graph search). Recall runs with no filter, a selective
filter (``bucket == 7``: 1% of the records), an ``$in`` (3%), a range
(``bucket`` in 0..9: 10%), an unselective one (``half == 0``: 50%), one on
``created_at`` (the later half) and a conjunction of two. For each it prints
the median latency per query, its ratio to unfiltered recall and to one raw
usearch search (``Index.restore`` of the store's own index file, width 64,
k nearest, one query at a time) measured in the same run, and recall@k
against the exact answer (a numpy scan of the records that pass, ties to
the lower id; the share of its records found), so the cost of exactness is
shown beside the cost in time. The raw search's own recall@k (unfiltered,
against the same exact answer) is printed beside it. The engine remembers a
filter's passing records for the snapshot a scan found them in, and the
timed queries commit nothing between them; the last column times queries
that each follow a commit (one deposit of another owner into a scratch copy
of the store), where every filter is evaluated afresh. The engine filters
inside its candidate scan: an owner scan keeps only records that pass, and a
graph search tests each candidate, widening, then scans when too few pass.

Runs against the installed package (``pip install .``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Optional

import numpy as np
from agentsensus import Store


def corpus(n: int, dim: int, seed: int = 1) -> np.ndarray:
    """Unit vectors around 64 cluster centres (a clustered corpus: filters
    then cut across clusters, as metadata does in practice)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((64, dim)).astype(np.float32)
    v = centres[rng.integers(0, 64, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def build(path: str, vecs: np.ndarray) -> list[int]:
    n = len(vecs)
    ids: list[int] = []
    with Store(path, dim=vecs.shape[1], candidates=0, sync=False) as s:
        step = 500
        for start in range(0, n, step):
            items = [
                ("a", [f"record {i}"], vecs[i : i + 1], {"bucket": i % 100, "half": i % 2})
                for i in range(start, min(n, start + step))
            ]
            for d in s.deposit_many(items):
                ids += d.ids
            print(f"  built {min(n, start + step)}/{n}", file=sys.stderr, flush=True)
    return ids


def exact(vecs: np.ndarray, ids: list[int], q: np.ndarray, k: int, keep: Callable[[int], bool]) -> list[int]:
    idx = np.array([i for i in range(len(vecs)) if keep(i)], dtype=np.int64)
    if len(idx) == 0:
        return []
    scores = vecs[idx] @ q
    order = sorted(range(len(idx)), key=lambda j: (-float(scores[j]), ids[idx[j]]))
    return [ids[idx[j]] for j in order[:k]]


def raw_index(path: str) -> Optional[Any]:
    """usearch's own view of the store's index file (plot_scale's copy of its
    body after our header), or None when usearch is absent."""
    from plot_scale import view_raw

    try:
        raw = view_raw(path)
    except ImportError:  # no usearch package
        return None
    raw.expansion_search = 64
    return raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out", default=None, help="also write the results as JSON here")
    a = ap.parse_args()

    work = a.workdir or tempfile.mkdtemp(prefix="filter-recall-")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, f"store-{a.n}-{a.dim}")
    vecs = corpus(a.n, a.dim)
    if os.path.exists(path):
        with Store(path) as s:
            ids = s.owned("a")
    else:
        ids = build(path, vecs)
    qs = corpus(a.queries, a.dim, seed=2)
    with Store(path, readonly=True) as s:
        created = [s.get(i).created_at for i in ids]
    later = sorted(created)[len(created) // 2]

    cases: dict[str, tuple[Any, Callable[[int], bool]]] = {
        "unfiltered": (None, lambda i: True),
        "selective (1%)": ({"bucket": 7}, lambda i: i % 100 == 7),
        "$in (3%)": ({"bucket": {"$in": [3, 50, 97]}}, lambda i: i % 100 in (3, 50, 97)),
        "range (10%)": ({"bucket": {"$gte": 0, "$lte": 9}}, lambda i: i % 100 <= 9),
        "unselective (50%)": ({"half": 0}, lambda i: i % 2 == 0),
        "created_at (50%)": ({"created_at": {"$gte": later}}, lambda i: created[i] >= later),
        "half and range (5%)": ({"half": 1, "bucket": {"$lte": 9}}, lambda i: i % 2 == 1 and i % 100 <= 9),
    }
    raw = raw_index(path)
    results: dict[str, dict[str, float]] = {}
    with Store(path, readonly=True) as s:
        for name, (where, keep) in cases.items():
            s.recall("a", qs[0], k=a.k, expand=False, where=where)  # warm
            if raw is not None:
                raw.search(qs[0], a.k)
            times, raw_times, found, wanted, raw_found = [], [], 0, 0, 0
            for q in qs:
                t = time.perf_counter()
                got = s.recall("a", q, k=a.k, expand=False, where=where)
                t1 = time.perf_counter()
                times.append(t1 - t)
                want = exact(vecs, ids, q, a.k, keep)
                found += len(set(m.id for m in got) & set(want))
                wanted += len(want)
                if raw is not None:  # one raw search beside each recall, so both see the same load
                    t2 = time.perf_counter()
                    keys = raw.search(q, a.k).keys
                    raw_times.append(time.perf_counter() - t2)
                    raw_found += len(set(int(x) for x in keys) & set(want)) if where is None else 0
            results[name] = {
                "median_ms": 1000 * statistics.median(times),
                "recall_at_k": found / wanted if wanted else 1.0,
            }
            if raw_times:
                results[name]["raw_median_ms"] = 1000 * statistics.median(raw_times)
                if where is None:
                    results[name]["raw_recall_at_k"] = raw_found / wanted if wanted else 1.0
    # A filter evaluated by a scan is remembered for its snapshot only: the
    # timed queries above (no commit between them) reuse it. Here each query
    # follows a commit (one deposit of another owner, on a scratch copy of
    # the store), so every filter is evaluated afresh.
    scratch = path + "-scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(path, scratch)
    fresh = max(5, a.queries // 4)
    with Store(scratch, candidates=0, sync=False) as s:
        for name, (where, _) in cases.items():
            s.recall("a", qs[0], k=a.k, expand=False, where=where)  # warm
            times = []
            for j, q in enumerate(qs[:fresh]):
                s.deposit("other", [f"commit {name} {j}"], [qs[-1 - j]])
                t = time.perf_counter()
                s.recall("a", q, k=a.k, expand=False, where=where)
                times.append(time.perf_counter() - t)
            results[name]["after_commit_median_ms"] = 1000 * statistics.median(times)
    shutil.rmtree(scratch, ignore_errors=True)
    base = results["unfiltered"]["median_ms"]
    raw_ms = statistics.median(r["raw_median_ms"] for r in results.values()) if raw is not None else float("nan")
    print(f"filtered recall, {a.n} records of one owner, dim {a.dim}, k={a.k}, {a.queries} queries")
    if raw is not None:
        rr = results["unfiltered"]["raw_recall_at_k"]
        print(f"raw usearch search of the same index (width 64): median {raw_ms:.3f} ms, recall@k {rr:.3f}")
    print(f"{'filter':<20} {'median ms':>10} {'x unfiltered':>13} {'x raw':>7} {'recall@k':>9} {'after commit ms':>16}")
    for name, r in results.items():
        r["ratio"] = r["median_ms"] / base if base else float("nan")
        r["ratio_raw"] = r["median_ms"] / raw_ms if raw is not None else float("nan")
        print(
            f"{name:<20} {r['median_ms']:>10.3f} {r['ratio']:>13.2f} {r['ratio_raw']:>7.2f} {r['recall_at_k']:>9.3f}"
            f" {r['after_commit_median_ms']:>16.3f}"
        )
    if a.out:
        with open(a.out, "w") as f:
            report = {"n": a.n, "dim": a.dim, "k": a.k, "queries": a.queries, "raw_median_ms": raw_ms}
            json.dump({**report, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
