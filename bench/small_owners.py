"""Small owners against the floor: ``Store.recall(owner, query, k=5)`` for
an owner of 0.1%, 1% and 10% of a store, against a numpy scan of exactly
that owner's vectors held in one contiguous float32 array (``vecs @ q``,
``argpartition`` for the top 5, then those 5 sorted, as recall returns
them ordered). The scan is the least work an exact answer can cost from
Python; the goal is the engine at most 1.0x it for owners up to 10%.

    python bench/compare.py --limits small-owners [--sizes 10000,100000] [--queries 1000]
    python bench/small_owners.py ...            # the same

Stores are the cached corpus stores of scale_stores.py (the clustered
corpus of datasets.py, dim 384); the owners are the side-by-side corpus's
(``milli`` 0.1%, ``a7`` 1%, ``tenth`` 10%). Queries are perturbed records.
Every call is timed alone (perf_counter), single-threaded (BLAS too), the
ways interleaved call by call, each on another query than the others at
that step, after an untimed pass of every way over every query; medians in
microseconds.

Where the time goes, per owner: ``expand=False`` (no affiliation hop: the
scan has none), ``engine.recall_memories`` called directly (the Python
checks of ``Store.recall`` left out), that call with k=1 (what each hit
costs to read and build beyond the first), and the same recall for an
owner of one record (in a private copy of the store with one more
deposit): what any recall costs before it scores a single vector.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

# Single-threaded BLAS: the scan and the searches are timed one thread per
# query, as the engine answers one; set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import datasets  # noqa: E402
import numpy as np  # noqa: E402
from agentsensus import Memory, Store, judges
from agentsensus._store.record_meta import decode_metadata
from scale_stores import corpus_store

K = 5
OWNERS = {"0.1%": "milli", "1%": "a7", "10%": "tenth"}
SOLO = "solo"  # the one-record owner added to the private copy
EXACT_CUTOFF = 4096  # Store(exact_cutoff=...) default: owners up to this many records are scanned


def numpy_top(vecs: np.ndarray, q: np.ndarray, k: int = K) -> np.ndarray:
    """The exact top k rows of vecs by inner product with q, best first."""
    s = vecs @ q
    if len(s) <= k:
        return np.argsort(-s)
    top = np.argpartition(-s, k)[:k]
    return top[np.argsort(-s[top])]


def _time(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(n: int, queries: int, workdir: str) -> list[dict[str, Any]]:
    """One row per owner share of the n-record store (and one for the
    one-record owner): medians in microseconds of every way, interleaved."""
    src = corpus_store(n)
    path = os.path.join(workdir, f"store-{n}")
    shutil.copytree(src, path, ignore=shutil.ignore_patterns("ready"))
    vectors = datasets.corpus(n, seed=0)
    qs = datasets.queries(vectors, queries + 1, seed=4242)
    rows: list[dict[str, Any]] = []
    with Store(path, judge=judges.never, sync=False) as s:
        # One fresh statement far from every record: a record of its own.
        s.deposit(SOLO, ["solo record"], datasets.vectors(1, seed=99)[0][None, :])
        engine = s._handles().engine
        owners = dict(OWNERS)
        owners["1 record"] = SOLO
        for label, owner in owners.items():
            owned = np.array([0]) if owner == SOLO else datasets.corpus_owned(n, owner)
            mine = np.ascontiguousarray(vectors[owned]) if owner != SOLO else datasets.vectors(1, seed=99)
            ways: dict[str, Callable[[np.ndarray], Any]] = {
                "numpy": lambda q, m=mine: numpy_top(m, q),
                "recall": lambda q, o=owner: s.recall(o, q, k=K),
                "recall_noexpand": lambda q, o=owner: s.recall(o, q, k=K, expand=False),
                "engine_direct": lambda q, o=owner: engine.recall_memories(
                    o, None, q, K, False, b"", float("-inf"), Memory, decode_metadata
                ),
                "engine_k1": lambda q, o=owner: engine.recall_memories(
                    o, None, q, 1, False, b"", float("-inf"), Memory, decode_metadata
                ),
            }
            got: dict[str, list[float]] = {w: [] for w in ways}
            names = list(ways)
            # Warm-up, untimed: every way answers every query once, so that the
            # store's mapped files are faulted in as the owner's array is, made
            # in memory just now (equal_recall.py measured the difference).
            for q in qs:
                for w in names:
                    ways[w](q)
            m = len(qs) - 1
            stride = max(1, m // len(names))
            for i in range(m):
                # in a seeded random order, so that no way always follows the same
                # other (whose data the caches would hold)
                for j in random.Random(i).sample(range(len(names)), len(names)):
                    w = names[j]
                    # each way on another query than the others at this step
                    q = qs[1 + (i + j * stride) % m]
                    got[w].append(_time(lambda: ways[w](q)))
            # An owner the engine scans gets the exact answer, the scan's.
            if owner != SOLO and len(owned) <= EXACT_CUTOFF:
                hits = {datasets.corpus_index(x.text) for x in s.recall(owner, qs[1], k=K, expand=False)}
                exact = set(owned[numpy_top(mine, qs[1])].tolist())
                assert hits == exact, (label, hits, exact)
            med = {w: statistics.median(ts) * 1e6 for w, ts in got.items()}
            rows.append({"n": n, "share": label, "owned": len(owned), **med})
    return rows


def table_markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table, ratios to the numpy scan."""
    out = [
        "| store | owner | records | numpy scan | recall | ratio | recall expand=False | ratio | "
        "engine call alone | the same, k=1 | goal <= 1.0x |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio, plain = r["recall"] / r["numpy"], r["recall_noexpand"] / r["numpy"]
        goal = "" if r["share"] == "1 record" else ("met" if ratio <= 1.0 else "**not met**")
        out.append(
            f"| {r['n']:,} | {r['share']} | {r['owned']:,} | {r['numpy']:.1f} us | {r['recall']:.1f} us | "
            f"{ratio:.2f}x | {r['recall_noexpand']:.1f} us | {plain:.2f}x | {r['engine_direct']:.1f} us | "
            f"{r['engine_k1']:.1f} us | {goal} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Measures and prints the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes (records)")
    ap.add_argument("--queries", type=int, default=1000, help="timed queries per owner")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not sizes or min(sizes) < 1000 or args.queries < 1:
        ap.error("--sizes must be at least 1000 records each (the 0.1% owner) and --queries at least 1")
    rows: list[dict[str, Any]] = []
    os.makedirs(datasets.DATA, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="small-owners-", dir=datasets.DATA) as work:
        for n in sizes:
            rows += measure(n, args.queries, work)
    print(f"\nsmall owners: recall k=5 against a numpy scan of the owner's own vectors, median of {args.queries}")
    print(f"queries, dim {datasets.DIM}, load {os.getloadavg()[0]:.2f}\n")
    print(table_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
