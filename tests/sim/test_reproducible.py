"""A seeded run is the same run in every process.

The HNSW graph the engine builds differs from process to process (parallel
inserts, and usearch's per-slot level generators that concurrent searches
reorder), so a deposit's candidates may not come from it: the simulation's
stores are small enough to be scanned exactly, ties to the lower id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agentsensus.sim.consensus import ConsensusBackend

pytestmark = pytest.mark.slow  # simulations in processes


def test_the_judge_meets_the_exact_nearest_records_ties_to_the_lower_id(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # 1,200 records that all tie with the query at 0.5 (one shared axis of two), and 3 that share both.
    dim, n = 64, 1200
    rng = np.random.default_rng(7)
    axes = rng.integers(2, dim, size=n)
    vecs = np.zeros((n, dim), np.float32)
    vecs[:, 0] = 1.0
    vecs[np.arange(n), axes] = 1.0
    for i in (100, 700, 1100):
        vecs[i, 1], vecs[i, axes[i]] = 1.0, 0.0
    seen: list[list[tuple[int, float]]] = []

    def judge(requests: list[Any]) -> list[int | None]:
        seen.extend([(int(c.id), float(c.score)) for c in r.candidates] for r in requests)
        return [None] * len(requests)

    b = ConsensusBackend(tmp_path / "store", dim, judge=judge, candidates=8)
    for start in range(0, n, 100):  # batches, so that commits and parallel searches interleave as in a run
        b.remember([(f"agent{i % 30}", [f"statement {i}"], vecs[i : i + 1]) for i in range(start, start + 100)], 0)
    seen.clear()
    query = np.zeros((1, dim), np.float32)
    query[0, 0] = query[0, 1] = 1.0
    b.remember([("agent0", ["the query"], query)], 1)
    assert len(seen) == 1
    ids = sorted(b.graph().owners)  # record ids, in deposit order
    want = [ids[i] for i in (100, 700, 1100)] + [ids[i] for i in range(n) if i not in (100, 700, 1100)][:5]
    assert [i for i, _ in seen[0]] == want
    assert [round(s, 4) for _, s in seen[0]] == [1.0] * 3 + [0.5] * 5
    b.close()


def _metrics(out: Path) -> dict[str, Any]:
    """metrics.json without what measures time or the machine's load."""

    def strip(d: Any) -> Any:
        if isinstance(d, dict):
            skip = ("seconds", "latency_bins", "machine")
            return {k: strip(v) for k, v in d.items() if k not in skip and "_ms" not in k}
        if isinstance(d, list):
            return [strip(v) for v in d]
        return d

    return strip(json.loads((out / "metrics.json").read_text(encoding="utf-8")))


def test_two_processes_with_other_hash_seeds_write_the_same_metrics(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Hamlet, whole: a world this size is where approximate candidates made runs part (a tiny one
    # is searched exhaustively either way). Both processes run at once, as two users' runs would.
    procs, outs = [], []
    for hash_seed in ("0", "1"):
        out = tmp_path / f"run-{hash_seed}"
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        cmd = [
            sys.executable,
            "-c",
            "from agentsensus.cli import main; raise SystemExit(main())",
            "simulate",
            "--backends",
            "consensus",
            "--rounds",
            "15",
            "--quick",
            "--no-ablation",
            "--seed",
            "3",
            "--quiet",
            "--out",
            str(out),
        ]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs.append(out)
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    a, b = (_metrics(o) for o in outs)
    assert a["backends"]["consensus"]["sim"] > 0
    assert a == b
