"""Deposit latency against the store's size: p50 of a one-statement deposit
(judge excluded) on copies of the side-by-side corpus store at several
sizes, with the time split by engine call.

    python bench/write_path.py                      # 1k, 10k, 100k records, sync off
    python bench/write_path.py --n 1000,100000 --sync both --reps 200
    python bench/write_path.py --n 100000 --kinds common --lexical-floor 0   # every word weighs

Each size's store is the cached corpus store of scale_stores.py (built on
first use into bench/.data/), copied so the cache stays as built. Two kinds
of statement are timed: ``fresh`` (one word no record holds: no lexical
candidate) and ``common`` (the word every corpus record holds, "record",
plus a fresh one: a posting list as long as the store). The split wraps the
engine's calls (prepare, lexical_word_counts, lexical, commit, ...); what
is left is the Python of the deposit path. Runs against the installed
package; bench/ is on ``sys.path`` because this file runs as a script.
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any, Callable

from agentsensus import Store, judges
from datasets import DATA, copy_of, vectors
from scale_stores import corpus_store

KINDS = {"fresh": "fresh{r}", "common": "record fresh{r}"}


class TimedEngine:
    """The engine with each call's wall time summed per method for the
    current deposit (``take`` returns and clears them)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self._spent: dict[str, float] = defaultdict(float)

    def take(self) -> dict[str, float]:
        """The time per engine method since the last take, in seconds."""
        out, self._spent = dict(self._spent), defaultdict(float)
        return out

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._engine, name)
        if not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self._spent[name] += time.perf_counter() - t0

        return timed


def measure(path: str, kind: str, reps: int, sync: bool, seed: int, floor: float) -> dict[str, Any]:
    """p50 of `reps` one-statement deposits (after one untimed), with the
    p50 of each engine method's share, in ms."""
    fresh = vectors(reps + 1, seed=seed)
    os.sync()  # the copy's dirty pages written back now, not during the timed deposits
    s = Store(path, judge=judges.never, sync=sync, lexical_floor=floor)
    try:
        timed = TimedEngine(s._engine)
        s._engine = timed
        totals: list[float] = []
        parts: dict[str, list[float]] = defaultdict(list)
        for r in range(reps + 1):
            text = KINDS[kind].format(r=f"{seed}x{r}")
            timed.take()
            t0 = time.perf_counter()
            s.deposit(f"a{r % 100}", [text], fresh[r : r + 1])
            dt = time.perf_counter() - t0
            spent = timed.take()
            if r == 0:
                continue  # warm-up
            totals.append(dt)
            for name, v in spent.items():
                parts[name].append(v)
            parts["python"].append(dt - sum(spent.values()))
    finally:
        s._engine = timed._engine
        s.close()
    ms = {name: 1e3 * statistics.median(v + [0.0] * (reps - len(v))) for name, v in parts.items()}
    return {"p50": 1e3 * statistics.median(totals), "p90": 1e3 * sorted(totals)[int(0.9 * len(totals))], "parts": ms}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="1000,10000,100000", help="comma-separated store sizes (records)")
    ap.add_argument("--reps", type=int, default=200, help="timed deposits per size, kind and sync")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {','.join(KINDS)}")
    ap.add_argument("--sync", choices=["off", "on", "both"], default="off", help="fsync each commit")
    ap.add_argument(
        "--lexical-floor",
        type=float,
        default=inspect.signature(Store).parameters["lexical_floor"].default,
        help="Store(lexical_floor=...), the store's default unless given; 0: every word weighs",
    )
    args = ap.parse_args(argv)
    sizes = [int(x) for x in args.n.split(",") if x]
    kinds = [k for k in args.kinds.split(",") if k]
    if not sizes or min(sizes) < 1 or set(kinds) - set(KINDS) or args.reps < 1:
        ap.error("sizes must be >= 1, kinds of " + ",".join(KINDS) + ", reps >= 1")
    syncs = {"off": [False], "on": [True], "both": [False, True]}[args.sync]
    os.makedirs(DATA, exist_ok=True)
    work = tempfile.mkdtemp(prefix="write-path-", dir=DATA)
    rows: list[tuple[int, str, bool, dict[str, Any]]] = []
    try:
        for n in sizes:
            base = corpus_store(n)
            for kind in kinds:
                for sync in syncs:
                    path = copy_of(base, os.path.join(work, f"{n}-{kind}-{int(sync)}"))
                    r = measure(path, kind, args.reps, sync, seed=500 + len(rows), floor=args.lexical_floor)
                    rows.append((n, kind, sync, r))
                    shutil.rmtree(path, ignore_errors=True)
                    print(f"{n:>7,} {kind:<6} sync={'on ' if sync else 'off'} p50 {r['p50']:.3f} ms", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names = sorted({name for *_, r in rows for name in r["parts"]}, key=_order)
    print(f"\none-statement deposit, judge excluded, lexical_floor={args.lexical_floor}, {args.reps} timed each;")
    print(f"ms, p50 of each column; load average {os.getloadavg()[0]:.2f} at the end\n")
    print("| records | statement | sync | p50 | p90 | " + " | ".join(names) + " |")
    print("|---:|---|---|---:|---:|" + "---:|" * len(names))
    for n, kind, sync, r in rows:
        cells = " | ".join(f"{r['parts'].get(name, 0.0):.3f}" for name in names)
        sy = "on" if sync else "off"
        print(f"| {n:,} | {kind} | {sy} | {r['p50']:.3f} | {r['p90']:.3f} | {cells} |")
    return 0


def _order(name: str) -> tuple[int, str]:
    first: Callable[[str], int] = ["prepare", "lexical_word_counts", "lexical", "commit", "python"].index
    try:
        return first(name), name
    except ValueError:
        return 9, name


if __name__ == "__main__":
    sys.exit(main())
