"""``agentsensus simulate --ray local`` end to end, as a real process: it
starts a cluster on 127.0.0.1, runs, writes metrics.json equal to the local
run's and stops the cluster (no cluster of this test process is up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_ray_simulation import _tiny_play, local_run, untimed

pytestmark = pytest.mark.slow  # a Ray cluster


def test_the_command_runs_on_a_local_cluster_it_starts_and_stops(tmp_path) -> None:
    tiny = os.fspath(tmp_path / "tiny.md")
    with open(tiny, "w", encoding="utf-8") as f:
        f.write(_tiny_play())
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "agentsensus.cli", "simulate", "--ray", "local", "--ray-nodes", "1"]
    cmd += ["--world", tiny, "--rounds", "3", "--seed", "2", "--out", os.fspath(out), "--quiet"]
    cmd += ["--backends", "consensus", "--quick"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert got["ray"]["nodes"] == 1 and got["rounds"] == 3 and len(got["ray"]["decide_seconds"]) == 3
    assert (out / "report.html").is_file() and (out / "events.jsonl").is_file()  # the local run's files
    assert untimed(got["backends"]["consensus"]) == untimed(local_run(tiny, seed=2, rounds=3)["backends"]["consensus"])
