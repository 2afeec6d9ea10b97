"""bench/planfence_experiments.py runs as a script, in its own process, on
the installed package, with tiny sizes: every table is printed, (c) with
both protocols, its breakdown and the crossover."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from planfence_baselines.timed_actions import PARTS

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench", "planfence_experiments.py"
)


def run_script(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the package comes from the install
    return subprocess.run(
        [sys.executable, SCRIPT, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_experiments_print_every_table(tmp_path):
    r = run_script(tmp_path, "--workflows", "2", "--actions", "4", "--rates", "0.5,8")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for heading in (
        "## (a)",
        "## (b)",
        "## (c)",
        "### (c) where the stall goes",
        "### (c) the same run with one setting",
        "### (c) why the shape differs",
        "## (d)",
    ):
        assert heading in out
    assert "| Planfence | 30/30 | 2/2 |" in out and "| freshness-only | 0/30 | 0/2 |" in out
    assert "per-update sync (acknowledged)" in out
    assert "| paper, 64x range | 143-237, flat" in out and "52 -> 1196" in out
    assert "| ours, 16x range | " in out and "Crossover (ours):" in out
    assert " | ".join(PARTS.values()) in out
    for executor in ("Planfence", "per-update sync"):
        for rate in ("0.5", "8"):
            assert f"| {executor} | {rate} | " in out
    for setting in ("Link model:", "Value size:", "Holders:", "Plan size:"):
        assert setting in out
    for variant in ("| as above |", "| 1 KiB values |", "| a 4-input plan |"):
        assert variant in out


def test_bad_rates_are_refused_in_one_line(tmp_path):
    r = run_script(tmp_path, "--rates", "8,0.5")
    assert r.returncode == 2
    assert "rates must be positive and increasing" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_the_script_does_not_reach_into_the_source_tree():
    with open(SCRIPT, encoding="utf-8") as f:
        text = f.read()
    assert "sys.path" not in text and "PYTHONPATH" not in text
