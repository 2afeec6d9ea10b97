"""bench/contradictions.py, run for real on a few of its cases with the hash
embedder: in its own process, from a directory outside the repository,
against the package this test imported (the versions it measures are newer
than some installed builds). The oracle run must keep every owner's view
exact (no superseded fact returned as current, no other fact lost) while
the control run, which never answers `Supersedes`, returns the superseded
facts: were supersession to stop working, the two would agree and this fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bench script as a process

BENCH = Path(__file__).resolve().parents[1] / "bench" / "contradictions.py"
# A move seen by two owners, another person's move, a three-version chain
# learned late, a visit and an addition that replace nothing.
CASES = "move-01,two-01,late-03,visit-01,add-01"


def totals(per_case: dict[str, dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for tally in per_case.values():
        for k, v in tally.items():
            out[k] = out.get(k, 0) + v
    return out


def test_oracle_keeps_views_exact_and_control_returns_stale(tmp_path: Path) -> None:
    out = tmp_path / "contradictions.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = ["--only", CASES, "--judges", "control,oracle", "--workdir", str(tmp_path / "stores"), "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| stale-as-current |" in done.stdout and "| unrelated-retired |" in done.stdout
    report = json.loads(out.read_text())
    assert report["cases"] == 5 and set(report["judges"]) == {"control", "oracle"}
    oracle, control = totals(report["judges"]["oracle"]), totals(report["judges"]["control"])
    assert oracle["superseded"] == control["superseded"] > 0 and oracle["current"] > 0
    assert oracle["stale"] == 0 and oracle["retired"] == 0, oracle
    assert oracle["as_of_ok"] == oracle["as_of"] > 0, oracle
    assert control["stale"] > 0, control
