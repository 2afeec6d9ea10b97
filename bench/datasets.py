"""Benchmark stores, built once and cached on disk outside git (bench/.data/).

Vectors are seeded Gaussian unit vectors at dim 384 (the MiniLM width), so a
store of a given size is the same on every machine and every run. Owners are
spread so that one store serves several owner selectivities at once.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import numpy as np

from agentsensus import Store, judges

DIM = 384
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".data")
ROUND = 100  # statements per deposit_many round while building


def vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def owner_of(i: int) -> str:
    """Record i's depositor: 100 agents in rotation ("a0".."a99", 1% each)."""
    return f"a{i % 100}"


def progress(label: str, done: int, total: int, t0: float) -> None:
    rate = done / max(time.perf_counter() - t0, 1e-9)
    eta = (total - done) / rate if rate else 0.0
    out = sys.stderr
    out.write(f"\r{label}: {done:,}/{total:,} ({rate:,.0f}/s, {eta:,.0f}s left)   ")
    if done == total:
        out.write("\n")
    out.flush()


def build(n: int, *, seed: int = 0) -> str:
    """The path of a closed store with n records, building it on first use.

    Besides the 1%-each depositors, owner "all" co-owns every record and
    owner "tenth" every tenth, so recall can be measured at 1%, 10% and 100%
    selectivity on one store (ownership is added by exact-duplicate deposits,
    which merge without a judge).
    """
    path = os.path.join(DATA, f"store-{n}-{seed}")
    if os.path.exists(os.path.join(path, "ready")):
        return path
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(DATA, exist_ok=True)
    chunk = 10_000
    t0 = time.perf_counter()
    with Store(path, dim=DIM, judge=judges.never, sync=False) as s:
        for start in range(0, n, chunk):
            vs = vectors(min(chunk, n - start), seed * 1_000_003 + start)
            for r in range(0, len(vs), ROUND):
                items = []
                for j in range(r, min(r + ROUND, len(vs))):
                    i = start + j
                    text = f"record {i}"
                    items.append((owner_of(i), [text], vs[j : j + 1]))
                    items.append(("all", [text], vs[j : j + 1]))
                    if i % 10 == 0:
                        items.append(("tenth", [text], vs[j : j + 1]))
                s.deposit_many(items)
            progress(f"building {n:,}-record store", min(start + chunk, n), n, t0)
    open(os.path.join(path, "ready"), "w").close()
    return path


def copy_of(path: str, dest: str) -> str:
    """A private copy to write into, so the cached store stays as built."""
    shutil.copytree(path, dest)
    return dest
