"""bench/filter_recall.py, run for real at a tiny size in its own process
against the installed package (no ``PYTHONPATH``, outside the repository):
it finishes, reports every filter, and, the owner being small enough for the
exact scan, finds exactly the records a numpy scan of the passing ones finds.
Its timings are not checked (performance lives in bench/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bench script as a process

BENCH = Path(__file__).resolve().parents[1] / "bench" / "filter_recall.py"


def test_filter_recall_bench_runs_and_is_exact_on_a_small_owner(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = tmp_path / "filter.json"
    args = ["--n", "300", "--queries", "10", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert set(report["results"]) == {
        "unfiltered",
        "selective (1%)",
        "$in (3%)",
        "range (10%)",
        "unselective (50%)",
        "created_at (50%)",
        "half and range (5%)",
    }
    assert all(r["recall_at_k"] == 1.0 for r in report["results"].values()), report
    assert "x unfiltered" in done.stdout and "x raw" in done.stdout
