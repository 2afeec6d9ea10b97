"""bench/ray_bench.py, run for real at a tiny size so that it keeps working:
in its own process, against the installed package (no ``PYTHONPATH``, the
working directory outside the repository). Only that each part finishes and
reports what it measured is checked, not its timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a Ray cluster

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ray_bench.py"


@pytest.mark.parametrize(
    "args, reports",
    [
        (
            ["reopen", "--records", "300", "--dim", "16", "--trials", "1"],
            ["no checkpoint", "checkpoint", "clean close"],
        ),
        (["check", "--repeat", "3"], ["in-process owners", "HTTP", "Ray actor calls"]),
        (
            ["calls", "--repeat", "3", "--records", "50"],
            ["no-op actor call (other node)", "recall k=5 on a local Store"],
        ),
    ],
    ids=["reopen", "check", "calls"],
)
def test_ray_bench_runs(tmp_path, args, reports) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    for r in reports:
        assert r in done.stdout, done.stdout
