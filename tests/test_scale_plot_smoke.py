"""bench/plot_scale.py, run for real at a tiny size against the installed
package (as tests/test_bench_smoke.py runs the other bench scripts): it
finishes, reports every measure at every size, and draws an SVG of them.
Its timings are not checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a bench script as a process

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_plot_scale_measures_and_draws(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["AGENTSENSUS_BENCH_DATA"] = str(tmp_path / "data")
    out, svg = tmp_path / "scale.json", tmp_path / "scale.svg"
    args = [str(BENCH / "plot_scale.py"), "--sizes", "1000,2000", "--deposits", "3", "--cold", "copy"]
    args += ["--json", str(out), "--svg", str(svg)]
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["n"] for r in rows] == [1000, 2000]
    for r in rows:
        assert set(r["recall"]) == {"0.1%", "1%", "10%", "50%", "100%"}
        assert all(0.0 <= c["recall_at_5"] <= 1.0 and c["p50_ms"] > 0 for c in r["recall"].values())
        assert r["deposit"]["ms"] > 0 and r["open"]["ms"] > 0 and r["verify"]["ms"] > 0
        assert r["sizes"]["index_bytes"] > 0 and r["sizes"]["lmdb_bytes"] > 0
        assert r["cold"]["how"].startswith("fresh copy") and r["cold"]["peak_rss_mib"] > 0
    text = svg.read_text()
    assert text.startswith("<svg") and text.count("<polyline") == 13
    replot = tmp_path / "again.svg"
    args = [str(BENCH / "plot_scale.py"), "--replot", str(out), "--svg", str(replot)]
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert replot.read_text() == text
