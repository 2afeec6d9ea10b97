"""Metrics keys, the report and the CLI on a tiny world (no engine needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentsensus.sim.cli import cli_main
from agentsensus.sim.kernel import RoundLog
from agentsensus.sim.metrics import backend_metrics, latency_bins, percentile
from agentsensus.sim.runner import run

BASELINES = ("generative_agents", "g_memory", "collaborative")
KEYS = {"sediment", "sim", "total", "shared", "three_plus", "max_owners", "linked", "remember_ms_p50",
        "recall_ms_p50", "remember_ms_p95", "recall_ms_p95", "expanded_frac", "linked_per_expanding_call",
        "growth", "latency_bins", "shared_pct", "linked_pct"}


def test_percentiles_and_bins() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0
    logs = [RoundLog(r, remember_ms=[float(r)], recall_ms=[2.0 * r]) for r in range(0, 12)]
    bins = latency_bins(logs)
    assert [b["rounds"] for b in bins] == [[1, 5], [6, 10], [11, 11]]
    assert bins[0]["remember_ms_p50"] == 3.0 and bins[1]["recall_ms_p50"] == 16.0


def test_backend_metrics_counts() -> None:
    logs = [RoundLog(0, records=10), RoundLog(1, records=15, recalls=4, expanded=2, edge_rows=6)]
    m = backend_metrics(logs, {"records": 15, "shared": 3, "three_plus": 1, "max_owners": 4, "linked": 12}, 1.0)
    assert (m["sediment"], m["sim"], m["total"]) == (10, 5, 15)
    assert m["shared_pct"] == 20.0 and m["expanded_frac"] == 0.5 and m["linked_per_expanding_call"] == 3.0
    assert m["growth"] == [10, 15]


def _run_tiny(tmp: Path, tiny_file: Path) -> dict:  # type: ignore[type-arg]
    return run(world=str(tiny_file), rounds=12, backends=BASELINES, out=tmp, progress=False)


def test_run_writes_metrics_and_a_self_contained_report(tmp_path, tiny_file) -> None:  # type: ignore[no-untyped-def]
    m = _run_tiny(tmp_path, tiny_file)
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(m))
    assert m["world"] == "The Tiny Tragedy" and 1 <= m["rounds"] <= 12
    assert set(m) >= {"world", "rounds", "backends", "ablation", "horizon"}
    assert list(m["backends"]) == list(BASELINES)
    for name, b in m["backends"].items():
        assert KEYS <= set(b), name
        assert b["shared"] == 0 and b["total"] == b["sediment"] + b["sim"]
        assert len(b["growth"]) == m["rounds"] + 1
    assert m["horizon"]["rounds"] == [10] and "10" in m["horizon"]["collaborative"]
    html = (tmp_path / "report.html").read_text()
    assert html.count("<svg") >= 5
    # Self-contained: no script, and no resource fetched from anywhere.
    assert "<script" not in html
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html)
    for title in ("Entries after each round", "Latency per 5 rounds", "Who spoke to whom", "Memory-affiliation graph"):
        assert title in html


def test_cli_runs_and_validates(tmp_path, tiny_file, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "rep"
    code = cli_main(["--world", str(tiny_file), "--rounds", "5", "--backends", "g_memory,collaborative",
                     "--out", str(out), "--quiet"])
    assert code == 0 and (out / "report.html").exists()
    assert list(json.loads((out / "metrics.json").read_text())["backends"]) == ["g_memory", "collaborative"]
    assert cli_main(["--backends", "nonsense", "--out", str(out)]) == 2
    assert cli_main(["--world", "no-such-play-anywhere", "--out", str(out)]) == 2
    assert cli_main(["--rounds", "0", "--out", str(out)]) == 2
    with pytest.raises(SystemExit):
        cli_main(["--embedder", "word2vec"])
    assert "--backends" in capsys.readouterr().err


def test_run_rejects_bad_arguments(tiny_file) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        run(world=str(tiny_file), rounds=0, out=None, progress=False)
    with pytest.raises(ValueError):
        run(world=str(tiny_file), backends=("mem0",), out=None, progress=False)
