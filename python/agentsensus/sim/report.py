"""The self-contained ``report.html``: tables and inline SVG figures.

It needs nothing but the file: no script, no stylesheet or font from the
network. Numbers come from the metrics dict that is also written as
``metrics.json``; the graphs come from :class:`ReportData`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any, Mapping

import numpy as np

from . import svg
from .backend import MemoryGraph
from .layout import circle_layout, force_layout, label_propagation

__all__ = ["ReportData", "PAPER", "render_report"]

#: What the Agentsensus paper reported, shown beside this run's numbers.
PAPER = {
    "fewer_entries": "22-44% fewer entries than the closest per-agent design",
    "shared": "14-28% of records shared, some by 10 agents",
    "linked": "94-99% linked",
    "ablation": "merging off: store 3.1x larger, sharing exactly 0",
    "horizon": "shared 6%, 9%, 14% at 10, 20, 40 rounds",
}

_NAMES = {
    "consensus": "Consensus (agentsensus)",
    "generative_agents": "Generative Agents",
    "g_memory": "G-Memory",
    "collaborative": "Collaborative memory",
}

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1040px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.7em;margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.8em 0;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right} th{background:#f3f5f8}
td:first-child,th:first-child{text-align:left}
.note{color:#555;font-size:.92em} .fig{margin:1em 0} .fig svg{width:100%;height:auto;max-width:760px}
.paper{color:#666;font-style:italic} code{background:#f3f3f3;padding:0 .2em}
"""


@dataclass
class ReportData:
    """What the figures draw beyond the numbers."""

    agents: list[str] = field(default_factory=list)
    interactions: dict[tuple[str, str], int] = field(default_factory=dict)  # (speaker, listener) -> times
    source_interactions: dict[tuple[str, str], int] = field(default_factory=dict)  # the play's own, round 0
    memory: MemoryGraph | None = None  # the consensus store's records and affiliation edges
    memory_backend: str = ""
    texts: dict[int, str] = field(default_factory=dict)  # record id -> text (cluster labels)
    appear: set[str] = field(default_factory=set)  # agents who appear


def _name(b: str) -> str:
    return _NAMES.get(b, b)


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return escape(str(v))


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _interaction_figure(data: ReportData) -> str:
    weights: dict[tuple[str, str], int] = {}
    for (a, b), n in data.interactions.items():
        key = (a, b) if a < b else (b, a)
        weights[key] = weights.get(key, 0) + n
    agents = [a for a in data.agents if any(a in k for k in weights)]
    if not agents:
        return '<p class="note">No one spoke to anyone.</p>'
    index = {a: i for i, a in enumerate(agents)}
    edges = [(index[a], index[b]) for a, b in weights]
    degree = np.zeros(len(agents))
    for (a, b), n in weights.items():
        degree[index[a]] += n
        degree[index[b]] += n
    sizes = 4 + 10 * np.sqrt(degree / max(degree.max(), 1))
    return svg.graph(circle_layout(len(agents)), edges, title="Who spoke to whom", labels=agents,
                     colors=[svg.PALETTE[0]] * len(agents), sizes=list(sizes),
                     tips=[f"{a}: {int(degree[i])} utterances heard or spoken" for i, a in enumerate(agents)],
                     edge_weights=[float(n) for n in weights.values()])


def _memory_figure(g: MemoryGraph, limit: int = 300) -> tuple[str, int, int]:
    ids = sorted(g.owners)
    if len(ids) > limit:
        # The most-linked records: the picture shows the store's structure, not its tail.
        degree: dict[int, int] = {}
        for a, b in g.edges:
            degree[a] = degree.get(a, 0) + 1
            degree[b] = degree.get(b, 0) + 1
        ids = sorted(sorted(ids, key=lambda i: (-degree.get(i, 0), i))[:limit])
    index = {rid: i for i, rid in enumerate(ids)}
    edges = [(index[a], index[b]) for a, b in sorted(g.edges) if a in index and b in index]
    labels = label_propagation(len(ids), edges)
    pos = force_layout(len(ids), edges)
    colors = [svg.PALETTE[lab % 8] if lab < 8 else svg.PALETTE[8] for lab in labels]
    sizes = [2.5 + 1.2 * np.sqrt(len(g.owners[rid])) for rid in ids]
    tips = [f"record {rid}: {len(g.owners[rid])} owner(s): {', '.join(sorted(g.owners[rid])[:6])}" for rid in ids]
    fig = svg.graph(pos, edges, title="Memory-affiliation graph", colors=colors, sizes=sizes, tips=tips)
    return fig, len(ids), len(set(labels))


def _heatmap_figure(g: MemoryGraph, agents: list[str], top: int = 20) -> str:
    counts: dict[str, int] = {}
    for owners in g.owners.values():
        for o in owners:
            counts[o] = counts.get(o, 0) + 1
    chosen = [a for a in sorted(counts, key=lambda a: (-counts[a], agents.index(a) if a in agents else 0))][:top]
    index = {a: i for i, a in enumerate(chosen)}
    m = np.zeros((len(chosen), len(chosen)))
    for owners in g.owners.values():
        present = [index[o] for o in owners if o in index]
        if len(owners) < 2:
            continue
        for i in present:
            for j in present:
                if i != j:
                    m[i, j] += 1
    return svg.heatmap(m, chosen, title="Records shared by each pair of agents")


def render_report(metrics: Mapping[str, Any], data: ReportData) -> str:
    """The whole report as one HTML string."""
    backends: dict[str, dict[str, Any]] = metrics["backends"]
    names = list(backends)
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>agentsensus simulation: {escape(metrics['world'])}</title><style>{_CSS}</style></head><body>"]
    parts.append(f"<h1>Four memories, one world: {escape(metrics['world'])}</h1>")
    parts.append(
        f"<p>{metrics['rounds']} rounds, {metrics.get('agents', '?')} agents, {metrics.get('events', '?')} events, "
        f"embedder <code>{escape(str(metrics.get('embedder', '')))}</code>. Every backend received the same "
        f"{_cell(backends[names[0]]['statements'] if names else 0)} statements in the same "
        f"{_cell(backends[names[0]]['deposits'] if names else 0)} deposits (one per witness and round); "
        "only the long-term memory differs between runs.</p>")

    # Table 1 and 2.
    closest = min((b for b in names if b != "consensus"), key=lambda b: backends[b]["total"], default=None)
    parts.append("<h2>Store size (Table 1)</h2>")
    rows = [[_name(b), m["sediment"], m["sim"], m["total"]] for b, m in backends.items()]
    parts.append(_table(["backend", "sediment", "sim", "total"], rows))
    if "consensus" in backends and closest:
        c, o = backends["consensus"]["total"], backends[closest]["total"]
        fewer = 100.0 * (o - c) / o if o else 0.0
        parts.append(f"<p>Consensus wrote <b>{fewer:.0f}% fewer entries</b> than the closest per-agent design "
                     f"({_name(closest)}). <span class='paper'>Paper: {PAPER['fewer_entries']}.</span></p>")
    parts.append("<h2>Sharing and linking (Tables 2 and 8)</h2>")
    rows = [[_name(b), m["shared"], f"{m['shared_pct']:.1f}%", m["three_plus"], m["max_owners"], m["linked"],
             f"{m['linked_pct']:.1f}%", f"{100 * m['expanded_frac']:.1f}%", m["linked_per_expanding_call"]]
            for b, m in backends.items()]
    parts.append(_table(["backend", "shared", "shared %", "3+ owners", "max owners", "linked", "linked %",
                         "recalls that expanded", "linked rows per expanding call"], rows))
    parts.append(f"<p class='paper'>Paper: {PAPER['shared']}; {PAPER['linked']}.</p>")

    # Growth.
    parts.append("<h2>Growth</h2><div class='fig'>")
    parts.append(svg.line_chart({_name(b): m["growth"] for b, m in backends.items()}, title="Entries after each round",
                                xlabel="round (0 = sediment)", ylabel="entries"))
    parts.append("</div>")

    # Latency.
    parts.append("<h2>Latency</h2>")
    rows = [[_name(b), m["remember_ms_p50"], m["remember_ms_p95"], m["recall_ms_p50"], m["recall_ms_p95"]]
            for b, m in backends.items()]
    parts.append(_table(["backend", "remember p50 ms", "remember p95 ms", "recall p50 ms", "recall p95 ms"], rows))
    parts.append("<p class='note'>A remember is one witness's deposit, timed as the round's batch divided by its "
                 "deposits; a recall is one owner-scoped query (k = 5, with expansion where the design has links). "
                 "No model sits on either path here; the paper's tens of seconds per write were its LLM judge.</p>")
    for key, label in (("remember_ms_p50", "remember, p50 ms"), ("recall_ms_p50", "recall, p50 ms")):
        bins = next(iter(backends.values()))["latency_bins"] if backends else []
        cats = [f"{b['rounds'][0]}-{b['rounds'][1]}" for b in bins]
        series = {_name(b): [x[key] for x in m["latency_bins"]] for b, m in backends.items()}
        parts.append("<div class='fig'>" + svg.bar_chart(cats, series, title=f"Latency per 5 rounds: {label}",
                                                          xlabel="rounds", ylabel=label) + "</div>")

    # Ablation and horizon.
    ab = metrics.get("ablation") or {}
    if ab:
        parts.append("<h2>Ablation: merging off</h2>")
        parts.append(_table(["consensus", "total", "shared", "linked", "max owners"],
                            [["merging on", ab["merging_on"]["total"], ab["merging_on"]["shared"],
                              ab["merging_on"]["linked"], ab["merging_on"]["max_owners"]],
                             ["merging off", ab["merging_off"]["total"], ab["merging_off"]["shared"],
                              ab["merging_off"]["linked"], ab["merging_off"]["max_owners"]]]))
        parts.append(f"<p>With merging off the store is <b>{ab['growth_factor']:.2f}x</b> larger and "
                     f"{ab['merging_off']['shared']} records are shared. <span class='paper'>Paper: "
                     f"{PAPER['ablation']}.</span></p>")
    hz = metrics.get("horizon") or {}
    if hz.get("rounds"):
        parts.append("<h2>Horizon</h2>")
        hrows: list[list[Any]] = []
        for b in names:
            if b in hz:
                hrows.append([_name(b)] + [f"{hz[b][str(r)]['shared_pct']:.1f}% of {hz[b][str(r)]['total']:,}"
                                           if str(r) in hz[b] else None for r in hz["rounds"]])
        parts.append(_table(["shared after"] + [f"{r} rounds" for r in hz["rounds"]], hrows))
        parts.append(f"<p class='paper'>Paper: {PAPER['horizon']}.</p>")

    # Graph figures.
    parts.append("<h2>The agents' interaction graph</h2><div class='fig'>" + _interaction_figure(data) + "</div>")
    parts.append("<p class='note'>An edge joins a speaker and a listener; its weight is how often one heard the other.</p>")
    if data.memory is not None and data.memory.owners:
        fig, shown, clusters = _memory_figure(data.memory)
        parts.append(f"<h2>Memory-affiliation graph ({escape(_name(data.memory_backend))})</h2>")
        parts.append(f"<div class='fig'>{fig}</div><p class='note'>{shown:,} of {len(data.memory.owners):,} records "
                     f"(the most linked), coloured by {clusters} clusters (label propagation); a node's size grows "
                     "with its owners; an edge is an affiliation edge (statements of one deposit).</p>")
        parts.append("<h2>Shared ownership</h2>")
        if any(len(o) >= 2 for o in data.memory.owners.values()):
            parts.append("<div class='fig'>" + _heatmap_figure(data.memory, data.agents) + "</div>")
            parts.append("<p class='note'>Cell (a, b): records owned by both a and b (the 20 agents owning most "
                         "records).</p>")
        else:
            parts.append(f"<p class='note'>No record of {escape(_name(data.memory_backend))} has two owners: "
                         "there is no shared ownership to draw.</p>")
    parts.append("<p class='note'>Made by <code>agentsensus simulate</code>; the numbers are also in "
                 "<code>metrics.json</code>.</p></body></html>")
    return "\n".join(parts)
