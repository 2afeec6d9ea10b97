"""The whole run on the tiny world: the issue's conditions, metrics.json, the report and the CLI."""

from __future__ import annotations

import json
import os
import platform
import re
from html import unescape as html_unescape

import pytest
from agentsensus.sim.backend import MemoryGraph
from agentsensus.sim.kernel import RoundLog
from agentsensus.sim.metrics import People, latency_bins, name_loss, percentile
from agentsensus.sim.plays import load_play
from agentsensus.sim.report_figures import heatmap_figure, interaction_figure, memory_figure
from agentsensus.sim.runner import run
from agentsensus.sim.simulate_cli import cli_main

pytestmark = pytest.mark.slow  # a simulation run per module

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
    # Over policy seeds, with whether sharing rises said plainly (a claim to test, not a target).
    seeds = m["horizon"]["seeds"]
    assert seeds["seeds"] == [0, 1, 2] and isinstance(seeds["sharing_rises"], bool)
    for h in ("10", "20", "40"):
        cell = seeds["consensus"][h]["sim_shared_pct"]
        assert (
            len(cell["values"]) == 3 and cell["sd"] >= 0 and min(cell["values"]) <= cell["mean"] <= max(cell["values"])
        )
    assert (
        seeds["consensus"]["40"]["sim_shared_pct"]["values"][0] == hz["40"]["sim_shared_pct"]
    )  # seed 0 is the main run
    for x in m["backends"].values():
        g = x["grounding"]
        assert g["says"] > 0 and 0 < g["drew_on_memory"] < 1  # some says draw on memory, not all
        assert 0 <= g["traced"] <= 1 and 0 <= g["names_right"] <= 1
        t = x["recall"]
        assert 0 < t["calls"] == x["recalls"] and t["hits_plus_expansion"] == t["hits"] + t["expansion_rows"]
        assert 0 <= t["q_in_hits"] <= 1 and 0 <= t["q_in_expansion"] <= 1
        assert x["says"]["total"] == g["says"] and 0 <= x["says"]["retelling_pct"] < 100


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


def test_metrics_and_report_record_the_machine(tiny_run) -> None:  # type: ignore[no-untyped-def]
    m, out = tiny_run
    mach = m["machine"]
    assert set(mach) >= {"cpu", "cores", "python", "platform", "load_start", "load_end"}
    assert mach["cores"] == os.cpu_count() and platform.python_version() in mach["python"]
    if hasattr(os, "getloadavg"):
        for key in ("load_start", "load_end"):
            assert len(mach[key]) == 3 and all(x >= 0 for x in mach[key]), key
    html = (out / "report.html").read_text()
    line = re.search(r"<p class='note machine'>Machine: (.*?)</p>", html)
    assert line is not None
    assert mach["cpu"] in line.group(1) and f"{mach['cores']} logical cores" in line.group(1)
    assert "at the start" in line.group(1) and "at the end" in line.group(1)


def test_captions_count_a_three_character_world(tmp_path, three_file) -> None:  # type: ignore[no-untyped-def]
    m = run(
        world=str(three_file),
        rounds=6,
        backends=("consensus",),
        out=tmp_path,
        progress=False,
        ablation=False,
        cache_rows=False,
        keep_names=False,
        horizon=(),
    )
    assert m["agents"] == 3
    html = (tmp_path / "report.html").read_text()
    notes = " ".join(re.findall(r"<p class='note[^']*'>(.*?)</p>", html, re.S))
    assert "All 3 agents who appear" in notes  # the interaction graph
    assert "for all 3 agents who appear and own a record" in notes  # the heatmap
    assert "by all 3 agents who own a record" in notes  # the ownership bars
    # No caption counts more agents than the world has.
    assert all(int(n) <= 3 for n in re.findall(r"(\d+) agents", notes)), re.findall(r"\d+ agents", notes)
    shown = re.search(r"All ([\d,]+) sim entries", notes)
    assert shown is not None and int(shown.group(1)) == m["backends"]["consensus"]["sim"]


def _label_boxes(svg_text: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    from agentsensus.sim.layout import text_box

    out = []
    for x, y, size, text in re.findall(
        r'<text class="label" x="([\d.-]+)" y="([\d.-]+)" font-size="([\d.]+)">([^<]*)</text>', svg_text
    ):
        out.append((html_unescape(text), text_box(float(x), float(y), html_unescape(text), float(size))))
    return out


def test_interaction_graph_draws_everyone_and_no_label_overlaps() -> None:
    from agentsensus.sim.layout import overlap

    cast = load_play("hamlet").cast
    talkers = cast[:-4]  # the last four appear but say nothing
    inter = {(a, talkers[(i + k) % len(talkers)]): 1 + k for i, a in enumerate(talkers) for k in (1, 2, 3)}
    fig = interaction_figure(inter, cast, appear=set(cast), dead=set(cast[-2:]))
    boxes = _label_boxes(fig.svg)
    assert sorted(name for name, _ in boxes) == sorted(cast)  # everyone who appears, each labelled once
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', fig.svg).groups())  # type: ignore[union-attr]
    circles = [
        (float(x) - float(r), float(y) - float(r), float(x) + float(r), float(y) + float(r))
        for x, y, r in re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="([\d.]+)"[^>]*>(?:<title>)', fig.svg)
    ]
    assert len(circles) == len(cast)
    for i, (a, box) in enumerate(boxes):
        assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, a
        for b, other in boxes[i + 1 :]:
            assert overlap(box, other) == 0, (a, b)
        assert all(overlap(box, c) == 0 for c in circles), a
    assert (
        f"{len(talkers)} of them spoke or listened" in fig.caption
        and "the other 4" in fig.caption
        and "2 of them died" in fig.caption
    )
    assert f"All {len(cast)} agents who appear" in fig.caption


def test_cluster_labels_are_whole_and_the_heatmap_names_its_scale_and_backend() -> None:
    long = "Horatio told Marcellus that the ghost of the old king walked the platform again at midnight, armed"
    g = MemoryGraph()
    for rid in range(1, 7):
        g.owners[rid] = frozenset({"Horatio", "Marcellus"} if rid == 1 else {"Horatio"})
        g.rounds[rid] = 1
    for rid in range(2, 7):
        g.link(1, rid)
    fig = memory_figure(g, {1: long}, backend="Consensus (agentsensus)")
    key = " ".join(re.findall(r'<text class="key"[^>]*>.*?<tspan x="30">([^<]*)</tspan></text>', fig.svg))
    assert long in html_unescape(key)
    assert "All 6 sim entries of Consensus (agentsensus)" in fig.caption
    heat = heatmap_figure(g, ["Horatio", "Marcellus"], {"Horatio", "Marcellus"}, backend="Consensus (agentsensus)")
    assert "square-root scale" in heat.svg and "Consensus (agentsensus)" in heat.svg
    assert "square root of the count" in heat.caption and "for all 2 agents" in heat.caption


def test_fact_runs_are_reported_fence_on_and_off(tiny_run) -> None:  # type: ignore[no-untyped-def]
    m, out = tiny_run
    on, off = m["facts"]["fence_on"], m["facts"]["fence_off"]
    # The tiny play's entrances, exits and deaths: the same source states in both runs, some superseding.
    assert on["source_states"] == off["source_states"] > 0 and on["linked"] > 0
    assert on["stale_actions"] == on["outdated_actions"] == 0  # the guard lets no move on a stale plan through
    assert off["caught"] == off["refused"] == off["blocked"] == 0  # no fence in the control
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Changes of state, and plans fenced on memories" in html
