"""What scopes cost a deposit: the median deposit time into a scope of a
store of N records, against the same deposit into a store without scopes,
measured in the same run on the installed package.

    python bench/scope_deposit.py --records 20000 --deposits 200

Cases (each store holds N records; the deposits are one statement each,
with the judge asked about its 8 candidates, which it always turns down):

- ``no scopes``: every record in the default scope (the baseline);
- ``small scope``: the deposit's scope holds 1% of the records, the rest are
  in 99 other scopes (its candidates come from an exact scan of the scope);
- ``half scope``: the deposit's scope holds half of the records (a graph
  search kept to the scope);
- ``default among named``: the default scope holds half, named scopes the
  rest (prepare lists the default scope's records on each deposit).

Prints each median (ms) and its ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from typing import Callable, Optional

import numpy as np
from agentsensus import Store


def never(requests: list) -> list[Optional[int]]:
    return [None] * len(requests)


def build(path: str, n: int, dim: int, scope_of: Callable[[int], str], rng: np.random.Generator) -> Store:
    s = Store(path, dim=dim, judge=never, min_similarity=-1.0, sync=False)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    batch = 500
    for at in range(0, n, batch):
        by_scope: dict[str, list[tuple[str, list[str], np.ndarray]]] = {}
        for i in range(at, min(n, at + batch)):
            by_scope.setdefault(scope_of(i), []).append((f"o{i % 50}", [f"fact number {i}"], vecs[i : i + 1]))
        for scope, items in by_scope.items():
            s.deposit_many(items, scope=scope)
    return s


def median_ms(s: Store, scope: str, dim: int, count: int, rng: np.random.Generator) -> float:
    times = []
    for j in range(count):
        v = rng.standard_normal((1, dim)).astype(np.float32)
        t = time.perf_counter()
        s.deposit("bench", [f"a new statement {j}"], v, scope=scope)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--deposits", type=int, default=200)
    ap.add_argument("--dim", type=int, default=64)
    a = ap.parse_args()
    n = a.records
    cases = [
        ("no scopes", lambda i: "", ""),
        ("small scope", lambda i: f"s{i % 100}", "s0"),
        ("half scope", lambda i: "big" if i % 2 == 0 else f"s{i % 100}", "big"),
        ("default among named", lambda i: "" if i % 2 == 0 else f"s{i % 100}", ""),
    ]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, scope_of, target) in enumerate(cases):
            print(f"building '{name}' ({n} records) ...", flush=True)
            s = build(f"{tmp}/{k}", n, a.dim, scope_of, np.random.default_rng(k))
            results[name] = median_ms(s, target, a.dim, a.deposits, np.random.default_rng(100 + k))
            s.close()
    base = results["no scopes"]
    print(f"\n{n} records, dim {a.dim}, {a.deposits} deposits per case (median ms, ratio to no scopes)")
    for name, ms in results.items():
        print(f"  {name:22s} {ms:8.3f} ms  {ms / base:5.2f}x")


if __name__ == "__main__":
    main()
