"""bench/merge_quality.py, run for real at its --quick size with the hash
embedder (no torch): in its own process, against the installed package, from
a directory outside the repository. Only that it finishes and reports each
mode is checked; the numbers are the bench's (docs/performance.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bench script as a process

BENCH = Path(__file__).resolve().parents[1] / "bench" / "merge_quality.py"


def test_merge_quality_quick_runs_all_three_modes(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--embedder", "hash"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"sim wording, \d+ facts, \d+ statements", out), out
    for mode in ("vector", "lexical", "hybrid"):
        assert re.search(rf"^{mode} +\d+ +[+-]\d+\.\d+% +\d+ +\d+", out, re.M), out
    assert "throughput hybrid / vector-only:" in out
    assert "recall (vector)" in out and "recall (fused)" in out
