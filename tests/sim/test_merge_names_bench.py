"""bench/merge_names.py runs for real on the tiny play: against the installed
package, in its own process, outside the repository. Only that it replays
the run's merges under every policy is checked, not its figures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.slow
def test_merge_names_replays_the_tiny_play(tiny_file: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [sys.executable, str(BENCH / "merge_names.py"), "--world", str(tiny_file), "--rounds", "3"]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows == ["policy", "keep_shorter", "keep_names", "fewest_lost", "cast"]
    assert "merges into" in done.stdout
