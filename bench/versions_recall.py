"""What versions cost recall: a 10k-record store (dim 128, 100 owners of 1%
each), recalled before and after 20 supersessions (a store with none skips
the per-owner validity check). Medians of 7 passes over 400 queries, in
microseconds per recall.

    python bench/versions_recall.py none
    python bench/versions_recall.py versions
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np
from agentsensus import Store, Supersedes

rng = np.random.default_rng(1)
N, D = 10000, 128
V = rng.standard_normal((N, D)).astype(np.float32)


def main(mode: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "s")
        with Store(p, dim=D, sync=False, min_similarity=2.0) as s:
            items = [(f"o{i % 100}", [f"statement {i}"], V[i : i + 1]) for i in range(N)]
            for a in range(0, N, 500):
                s.deposit_many(items[a : a + 500])
        with Store(p, sync=False, min_similarity=-1.0) as s:
            if mode == "versions":
                for j in range(20):
                    s.deposit(
                        f"o{j}",
                        [f"newer {j}"],
                        V[j : j + 1] + 0.01,
                        judge=lambda rs: [Supersedes(r.candidates[0].id) for r in rs],
                    )
                print("chains", sum(1 for m in s.records() if m.superseded_by))
            Q = rng.standard_normal((400, D)).astype(np.float32)
            res = {}
            for name, expand in [("1% expand", True), ("1% no expand", False)]:
                ts = []
                for _ in range(7):
                    t = time.perf_counter()
                    for i, q in enumerate(Q):
                        s.recall(f"o{i % 100}", q, k=5, expand=expand)
                    ts.append((time.perf_counter() - t) / len(Q) * 1e6)
                res[name] = statistics.median(ts)
            print(mode, {k: round(v, 1) for k, v in res.items()})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "none")
