"""What ``Store(disclosure="own_words")`` costs a recall: the median recall
time of one owner holding N records, with ``"shared"`` and with
``"own_words"`` (which reads every record the owner holds), measured in the
same run on the installed package.

    python bench/own_words_recall.py --records 1000 4000 --recalls 20

Prints, per size, each median (ms) and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
from agentsensus import Store


def median_recall_ms(path: str, disclosure: str, queries: np.ndarray) -> float:
    with Store(path, disclosure=disclosure) as s:
        times = []
        for q in queries:
            t = time.perf_counter()
            s.recall("owner", q, k=5)
            times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    """Builds one store per size and prints the medians."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, nargs="+", default=[1000, 4000])
    p.add_argument("--recalls", type=int, default=20)
    p.add_argument("--dim", type=int, default=64)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    for n in args.records:
        with tempfile.TemporaryDirectory() as d:
            path = f"{d}/store"
            with Store(path, dim=args.dim, sync=False, candidates=0, lexical_candidates=0) as s:
                for i in range(0, n, 500):
                    m = min(500, n - i)
                    texts = [f"statement {j} about thing {j % 97}" for j in range(i, i + m)]
                    s.deposit("owner", texts, rng.standard_normal((m, args.dim)).astype(np.float32))
            queries = rng.standard_normal((args.recalls, args.dim)).astype(np.float32)
            shared = median_recall_ms(path, "shared", queries)
            own = median_recall_ms(path, "own_words", queries)
            print(f"{n:>8} records: shared {shared:8.2f} ms, own_words {own:8.2f} ms ({own / shared:.1f}x)")


if __name__ == "__main__":
    main()
