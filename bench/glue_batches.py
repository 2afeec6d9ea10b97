"""``deposit_many`` against the Python glue of the same semantics (the
usearch and lmdb packages, one write transaction per batch:
peers/python_glue.py) at several batch sizes, in one run: statements per
second of each, medians over repeats, and the engine's over the glue's.

    python bench/glue_batches.py [--n 10000] [--batches 100,500] [--repeats 7]

Both start from the same ``--n`` record clustered corpus (compare.py's
build), then deposit the same fresh statements: a batch of B is B agents
with one statement each, a word no other text holds (no merge, no
candidate by words), a no-op judge. The two alternate batch by batch, in
turns, so load on a shared machine falls on both. ``sync=False`` for both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import datasets
import peers
from peers.base import Corpus

PEERS = ("agentsensus", "python-glue")


def main(argv: list[str] | None = None) -> int:
    """Measures and prints the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000, help="records in each store before the batches")
    ap.add_argument("--batches", default="100,500", help="comma-separated batch sizes (statements per deposit_many)")
    ap.add_argument("--repeats", type=int, default=7, help="timed batches per size and peer (one more warms up)")
    a = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in a.batches.split(",") if x]
    except ValueError:
        ap.error(f"--batches must be comma-separated integers, got {a.batches!r}")
    if not sizes or min(sizes) < 1 or a.repeats < 1 or a.n < 1000:
        ap.error("--batches must be positive, --repeats at least 1 and --n at least 1000")
    os.makedirs(datasets.DATA, exist_ok=True)
    corpus = Corpus(datasets.corpus(a.n, seed=0))
    rates: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="glue-batches-", dir=datasets.DATA) as work:
        ps = [peers.make(name, os.path.join(work, name), sync=False, cache_dir=datasets.DATA) for name in PEERS]
        try:
            for p in ps:
                p.build(corpus, datasets.progress)
            for size in sizes:
                fresh = datasets.vectors((a.repeats + 1) * size, seed=3000 + size, dim=datasets.DIM)
                t0 = time.perf_counter()
                for r in range(a.repeats + 1):
                    vecs = fresh[r * size : (r + 1) * size]
                    items = [(f"a{j}", [f"gluefresh{size}x{r}x{j}"], vecs[j : j + 1]) for j in range(size)]
                    for p in ps if r % 2 == 0 else ps[::-1]:
                        t = time.perf_counter()
                        p.deposit_many(items)
                        dt = time.perf_counter() - t
                        if r:  # the first batch of each size warms up
                            rates.setdefault((size, p.name), []).append(size / dt)
                    datasets.progress(f"batches of {size}", r + 1, a.repeats + 1, t0)
        finally:
            for p in ps:
                p.close()
    print(f"\ndeposit_many against the Python glue, {a.n:,} records before, sync=False, median of {a.repeats}")
    print(f"batches per size; load average {os.getloadavg()[0]:.2f}\n")
    print("| statements per batch | agentsensus statements/s | python-glue statements/s | engine over glue |")
    print("|---|---|---|---|")
    for size in sizes:
        eng, glue = (statistics.median(rates[(size, name)]) for name in PEERS)
        print(f"| {size} | {eng:,.0f} | {glue:,.0f} | {eng / glue:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
