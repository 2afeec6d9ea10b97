"""Store.recall_many against the same recalls one by one: queries per
second of each over a batch of (owner, query) pairs, medians over repeats,
and their ratio, both of the medians and paired (the median over repeats of
the two ways' ratio within one repeat).

    python bench/recall_many.py [--n 20000] [--batch 256] [--owners agents] [--k 5] [--repeats 7]

The store is the clustered corpus of datasets.py (dim 384), built once into
bench/.data/ by scale_stores.py. ``--owners agents`` asks as its 100
depositing agents in turn (each owns 1%: a simulation's round, each agent
recalling its own memories); ``tenth`` and ``all`` ask as the owners of 10%
and of every record (graph searches at large N). Queries are perturbed
records (seeded). The ways alternate within each repeat, so load on a
shared machine falls on all; the load average is printed with the table,
and each way's cores used (this process's CPU time over wall time).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from agentsensus import Store, _core
from datasets import corpus_queries
from scale_stores import corpus_store

# recall_many converts the answers to Memory objects while the engine makes
# the rest (the default: the caller's thread is one of the engine's workers),
# or after the engine made them all (_core.recall_many_overlap(False)).
WAYS = ("recall one by one", "recall_many, converting after", "recall_many")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20000, help="records in the store")
    ap.add_argument("--batch", type=int, default=256, help="(owner, query) pairs per batch")
    ap.add_argument("--owners", choices=["agents", "tenth", "all"], default="agents")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()

    path = corpus_store(a.n)
    qs = corpus_queries(a.n, a.batch, seed=a.seed)
    owners = [f"a{i % 100}" if a.owners == "agents" else a.owners for i in range(a.batch)]
    pairs = list(zip(owners, qs))
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}  # this process's CPU seconds, all threads
    default = _core.recall_many_overlap(True)
    with Store(path, create=False, readonly=True) as s:
        assert s.recall_many(pairs, k=a.k) == [s.recall(o, q, k=a.k) for o, q in pairs], "answers differ"
        for r in range(a.repeats):
            for way in WAYS if r % 2 == 0 else WAYS[::-1]:
                _core.recall_many_overlap(way != "recall_many, converting after")
                t, c = time.perf_counter(), time.process_time()
                if way == "recall one by one":
                    for o, q in pairs:
                        s.recall(o, q, k=a.k)
                else:
                    s.recall_many(pairs, k=a.k)
                times[way].append(time.perf_counter() - t)
                cpu[way].append(time.process_time() - c)
        _core.recall_many_overlap(default)
    qps = {way: a.batch / statistics.median(t) for way, t in times.items()}
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"N={a.n} dim 384, owners {a.owners}, batch {a.batch}, k={a.k}, {a.repeats} repeats")
    print(f"cores {os.cpu_count()}, load average {load}")
    # cores used: CPU time over wall time; under 2 for recall_many on 2
    # cores means other processes held the second core.
    # paired: the median over repeats of one by one's time over this way's
    # in the same repeat, steadier than the ratio of medians when the
    # machine's speed drifts between repeats.
    print(f"{'way':<34}{'median ms':>11}{'QPS':>9}{'ratio':>8}{'paired':>8}{'cores used':>12}")
    for way in WAYS:
        ms = 1000 * statistics.median(times[way])
        used = statistics.median(c / t for c, t in zip(cpu[way], times[way]))
        paired = statistics.median(o / t for o, t in zip(times[WAYS[0]], times[way]))
        print(f"{way:<34}{ms:>11.2f}{qps[way]:>9.0f}{qps[way] / qps[WAYS[0]]:>7.2f}x{paired:>7.2f}x{used:>12.2f}")


if __name__ == "__main__":
    main()
