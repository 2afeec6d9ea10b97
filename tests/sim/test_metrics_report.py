"""The whole run on the tiny world: the issue's conditions, metrics.json, the report and the CLI."""

from __future__ import annotations

import json
import re

import pytest
from agentsensus.sim.kernel import RoundLog
from agentsensus.sim.metrics import People, latency_bins, name_loss, percentile
from agentsensus.sim.runner import run
from agentsensus.sim.simulate_cli import cli_main

BASELINES = ("generative_agents", "g_memory", "collaborative")
KEYS = {
    "sediment",
    "sim",
    "total",
    "shared",
    "three_plus",
    "max_owners",
    "linked",
    "remember_ms_p50",
    "recall_ms_p50",
    "remember_ms_p95",
    "recall_ms_p95",
    "expanded_frac",
    "linked_per_expanding_call",
    "growth",
    "latency_bins",
    "shared_pct",
    "linked_pct",
    "sim_shared_pct",
    "sim_linked_pct",
    "grounding",
    "actions",
    "hits",
    "expansion_rows",
    "amplification",
    "owned",
    "sim_pointed_pct",
}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_text):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("rep")
    src = out / "tiny.md"
    src.write_text(tiny_text, encoding="utf-8")
    return run(world=str(src), rounds=40, out=out, progress=False), out


def test_percentiles_bins_and_name_loss() -> None:
    assert percentile([], 50) is None and percentile([1.0, 2.0, 3.0], 50) == 2.0
    logs = [RoundLog(r, remember_ms=[float(r)], recall_ms=[2.0 * r]) for r in range(0, 12)]
    bins = latency_bins(logs)
    assert [b["rounds"] for b in bins] == [[1, 5], [6, 10], [11, 11]]
    assert bins[0]["remember_ms_p50"] == 3.0 and bins[1]["recall_ms_p50"] == 16.0
    people = People(["Lord Polonius", "Hamlet", "King Claudius", "Queen Gertrude"])
    assert people("Polonius told Hamlet and the king") == {"Lord Polonius", "Hamlet"}

    class M:
        def __init__(self, kept: str, discarded: str) -> None:
            self.kept, self.discarded = kept, discarded

    got = name_loss([M('I told them: "x"', 'Hamlet told us: "x"'), M("Hamlet wept.", "Hamlet wept sorely.")], people)
    assert (
        got["fraction"] == 0.5
        and got["lost_name"] == 1
        and got["discarded_chars"] == len('Hamlet told us: "x"') + len("Hamlet wept sorely.")
    )


def test_consensus_is_smallest_and_only_consensus_shares(tiny_run) -> None:  # type: ignore[no-untyped-def]
    m, _ = tiny_run
    b = m["backends"]
    assert list(b) == ["consensus", *BASELINES]
    for name in BASELINES:
        assert b["consensus"]["sim"] < b[name]["sim"], name
        assert b[name]["sim_shared"] == 0 and b[name]["shared"] == 0, name
        assert b[name]["sim_linked_pct"] == 0.0 and b[name]["linked"] == 0, name  # affiliation is consensus's alone
    assert b["consensus"]["sim_shared"] > 0 and b["consensus"]["sim_linked_pct"] > 0
    assert b["g_memory"]["sim_pointed_pct"] > 0  # its pointers are counted apart


def test_judge_precision_against_provenance(tiny_run, tiny_text, tmp_path) -> None:  # type: ignore[no-untyped-def]
    m, _ = tiny_run
    j = m["backends"]["consensus"]["judge"]
    # Without time stamps two events alike in words (a move repeated in another round) read as one.
    assert j["merges"] > 0 and 0 < j["precision"] <= 1 and 0 < j["recall"] <= 1
    src = tmp_path / "tiny.md"
    src.write_text(tiny_text, encoding="utf-8")
    stamped = run(
        world=str(src),
        rounds=40,
        backends=("consensus",),
        out=None,
        progress=False,
        timestamps=True,
        ablation=False,
        cache_rows=False,
        keep_names=False,
        horizon=(),
    )
    js = stamped["backends"]["consensus"]["judge"]
    assert stamped["timestamps"] is True and m["timestamps"] is False
    assert js["merges"] > 0 and js["precision"] >= 0.95 and 0 < js["recall"] <= 1
    nl = m["backends"]["consensus"]["name_loss"]
    assert set(nl) == {"keep_shorter", "keep_names"} and nl["keep_names"] < nl["keep_shorter"]


def test_cache_rows_actions_horizon_and_grounding(tiny_run) -> None:  # type: ignore[no-untyped-def]
    m, _ = tiny_run
    rows = m["cache"]
    assert set(rows) == {"fifo", "relevance", "hybrid"}
    assert len({(r["sim"], r["sim_shared_pct"]) for r in rows.values()}) > 1  # the cache policy matters
    acts = {name: tuple(sorted(x["actions"].items())) for name, x in m["backends"].items()}
    assert any(acts["consensus"] != acts[name] for name in BASELINES)
    hz = m["horizon"]["consensus"]
    assert list(hz) == ["10", "20", "40"] and hz["10"]["sim"] < hz["20"]["sim"] < hz["40"]["sim"]
    assert hz["10"]["sim_shared_pct"] < hz["40"]["sim_shared_pct"]  # sharing rises with the horizon
    for x in m["backends"].values():
        g = x["grounding"]
        assert g["says"] > 0 and 0 <= g["names_right"] <= g["traced"] <= 1


def test_metrics_json_and_a_self_contained_report(tiny_run) -> None:  # type: ignore[no-untyped-def]
    m, out = tiny_run
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(m))
    assert set(m) >= {
        "world",
        "rounds",
        "backends",
        "ablation",
        "horizon",
        "cache",
        "policy",
        "judge",
        "seed",
        "variation",
        "embedder",
        "source_events",
        "merge_policy",
        "timestamps",
        "judge_curve",
        "judge_pairs",
    }
    assert m["world"] == "The Tiny Tragedy" and m["rounds"] == 40
    assert (
        m["merge_policy"] == "keep_shorter" and "merge <code>keep_shorter</code>" in (out / "report.html").read_text()
    )
    for name, b in m["backends"].items():
        assert KEYS <= set(b), name
        assert b["total"] == b["sediment"] + b["sim"] and len(b["growth"]) == m["rounds"] + 1
    ab = m["ablation"]
    assert ab["merging_off"]["shared"] == 0 and ab["growth_factor"] > 1
    html = (out / "report.html").read_text()
    assert "<script" not in html and not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html)
    for title in (
        "Entries after each round",
        "Who spoke to whom",
        "Memory-affiliation graph",
        "Paper",
        "The judge per variation level",
    ):
        assert title in html


def test_cli_runs_lists_and_validates(tmp_path, tiny_file, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "rep"
    code = cli_main(
        [
            "--world",
            str(tiny_file),
            "--rounds",
            "3",
            "--backends",
            "g_memory,collaborative",
            "--out",
            str(out),
            "--quiet",
            "--quick",
            "--seed",
            "3",
            "--cache",
            "fifo",
            "--variation",
            "0.2",
        ]
    )
    assert code == 0 and (out / "report.html").exists()
    m = json.loads((out / "metrics.json").read_text())
    assert list(m["backends"]) == ["g_memory", "collaborative"] and (m["seed"], m["variation"]) == (3, 0.2)
    assert cli_main(["--list-worlds"]) == 0 and "hamlet" in capsys.readouterr().out.split()
    for bad in (
        ["--backends", "nonsense"],
        ["--world", "no-such-play-anywhere"],
        ["--rounds", "0"],
        ["--variation", "2"],
        ["--policy", "llm"],
    ):
        assert cli_main(bad + ["--out", str(out)]) == 2, bad
        err = capsys.readouterr().err.strip()
        assert err.startswith("agentsensus simulate: ") and "\n" not in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        cli_main(["--embedder", "word2vec"])


def test_run_rejects_bad_arguments(tiny_file) -> None:  # type: ignore[no-untyped-def]
    for kw in ({"rounds": 0}, {"backends": ("mem0",)}, {"cache_policy": "lru"}, {"variation": 1.5}):
        with pytest.raises(ValueError):
            run(world=str(tiny_file), out=None, progress=False, **kw)  # type: ignore[arg-type]
