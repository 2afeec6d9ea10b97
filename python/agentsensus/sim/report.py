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
    "source": "Hamlet sedimented as 1,135 events",
    "fewer_entries": "22-44% fewer entries than the closest per-agent design",
    "shared": "Hamlet: 28% of sim entries shared, 2 with 3+ owners, at most 3 owners (14-28% over its worlds)",
    "linked": "consensus 94-99% linked; every baseline 0% by construction",
    "ablation": "merging off: store 3.1x larger, sharing exactly 0",
    "horizon": "shared 6%, 9%, 14% at 10, 20, 40 rounds",
    "name_loss": "keep-shorter dropped a named character in 22-37% of merges",
    "latency": "tens of seconds per remember (an LLM judge on the write path)",
    "judge": "not measured: the paper had no provenance to score its judge against",
    "grounding": "judged by an LLM",
}

#: One sentence on each way this run's setting differs from the paper's.
SETTING = [
    (
        "policy",
        "The paper's agents were LLMs; here, unless a model is given, seeded agents retell what their "
        "recall returned (news first), so the backend still changes what they say, but nobody invents.",
    ),
    (
        "judge",
        "The paper's judge was an LLM; this one reads only the texts and scores (idf-weighted overlap of "
        "what the accounts report), and the ledger scores it against provenance.",
    ),
    (
        "embedder",
        "The paper embedded with a sentence model; the hashing embedder here knows words, not synonyms, "
        "so the judge's candidates are the lexical neighbours.",
    ),
    (
        "world",
        "The paper let agents continue a sedimented story; here every character on stage witnesses every "
        "event and deposits its own account, so one event reaches the store once per witness. Most sim "
        "entries are moves and acts seen by several, whose accounts merge in the round they are made, so "
        "sharing over sim entries starts far above the paper's. Retellings add listeners to older entries "
        "as rounds go on, while moves into places nobody else stands in add one-owner entries; which of "
        "the two gains sets the horizon's trend.",
    ),
]

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
.paper{color:#666;font-style:italic} code{background:#f3f3f3;padding:0 .2em} .settings{background:#f6f8fa;padding:.5em .8em;border-radius:4px}
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


def _community_colors(labels: list[int]) -> list[str]:
    return [svg.PALETTE[lab] if lab < 8 else svg.PALETTE[8] for lab in labels]


def _interaction_figure(interactions: dict[tuple[str, str], int], agents: list[str]) -> str:
    weights: dict[tuple[str, str], int] = {}
    for (a, b), n in interactions.items():
        key = (a, b) if a < b else (b, a)
        weights[key] = weights.get(key, 0) + n
    names = [a for a in agents if any(a in k for k in weights)]
    if not names:
        return '<p class="note">No one spoke to anyone.</p>'
    index = {a: i for i, a in enumerate(names)}
    edges = [(index[a], index[b]) for a, b in weights]
    degree = np.zeros(len(names))
    for (a, b), n in weights.items():
        degree[index[a]] += n
        degree[index[b]] += n
    communities = label_propagation(len(names), edges)
    # Members of a community sit together on the circle.
    order = sorted(range(len(names)), key=lambda i: (communities[i], names[i]))
    ring = circle_layout(len(names))
    pos = np.zeros_like(ring)
    for slot, i in enumerate(order):
        pos[i] = ring[slot]
    sizes = 4 + 10 * np.sqrt(degree / max(degree.max(), 1))
    k = len(set(communities))
    return svg.graph(
        pos,
        edges,
        title="Who spoke to whom",
        labels=names,
        colors=_community_colors(communities),
        sizes=list(sizes),
        tips=[
            f"{a}: {int(degree[i])} utterances heard or spoken, community {communities[i] + 1}"
            for i, a in enumerate(names)
        ],
        edge_weights=[float(n) for n in weights.values()],
        legend=[(svg.PALETTE[c], f"community {c + 1}") for c in range(min(k, 8))],
    )


def _short(text: str, n: int = 46) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _memory_figure(g: MemoryGraph, texts: dict[int, str], limit: int = 300) -> tuple[str, int, int]:
    ids = sorted(i for i in g.owners if g.rounds.get(i, 0) >= 1) or sorted(g.owners)
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
    colors = _community_colors(labels)
    sizes = [2.5 + 1.2 * np.sqrt(len(g.owners[rid])) for rid in ids]
    tips = [
        f"record {rid}: {len(g.owners[rid])} owner(s): {', '.join(sorted(g.owners[rid])[:6])}: "
        f"{_short(texts.get(rid, ''), 120)}"
        for rid in ids
    ]
    notes = []
    for c in range(min(len(set(labels)), 6)):
        members = [i for i, lab in enumerate(labels) if lab == c]
        if len(members) < 3:
            continue
        # A cluster is named by its most-owned member's text and that member's owners.
        top = max(members, key=lambda i: (len(g.owners[ids[i]]), -ids[i]))
        owners = sorted(g.owners[ids[top]])
        who = ", ".join(owners[:2]) + (f" +{len(owners) - 2}" if len(owners) > 2 else "")
        cx, cy = pos[members].mean(axis=0)
        notes.append(
            (float(cx), float(cy), f"\u201c{_short(texts.get(ids[top], '?'), 30)}\u201d {who}", colors[members[0]])
        )
    fig = svg.graph(pos, edges, title="Memory-affiliation graph", colors=colors, sizes=sizes, tips=tips, notes=notes)
    return fig, len(ids), len(set(labels))


def _heatmap_figure(g: MemoryGraph, agents: list[str], appear: set[str], top: int = 20) -> str:
    counts: dict[str, int] = {}
    for owners in g.owners.values():
        for o in owners:
            if not appear or o in appear:
                counts[o] = counts.get(o, 0) + 1
    chosen = sorted(counts, key=lambda a: (-counts[a], agents.index(a) if a in agents else 0))[:top]
    index = {a: i for i, a in enumerate(chosen)}
    m = np.zeros((len(chosen), len(chosen)))
    for owners in g.owners.values():
        if len(owners) < 2:
            continue
        present = [index[o] for o in owners if o in index]
        for i in present:
            for j in present:
                if i != j:
                    m[i, j] += 1
    return svg.heatmap(m, chosen, title="Records shared by each pair of agents")


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def render_report(metrics: Mapping[str, Any], data: ReportData) -> str:
    """The whole report as one HTML string."""
    backends: dict[str, dict[str, Any]] = metrics["backends"]
    names = list(backends)
    first = backends[names[0]] if names else {}
    cons = backends.get("consensus")
    p: list[str] = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>agentsensus simulation: {escape(metrics['world'])}</title><style>{_CSS}</style></head><body>"
    ]
    p.append(f"<h1>Four memories, one world: {escape(metrics['world'])}</h1>")
    p.append(
        f"<p>The whole play sedimented at round 0 ({_cell(metrics.get('source_events'))} events, every witness "
        f"depositing its own account), then {metrics['rounds']} rounds in which the play's survivors act from "
        f"what they recall ({_cell(metrics.get('events'))} new events in the first backend's run; "
        f"{_cell(metrics.get('agents'))} agents appear). "
        f"Every backend received the same source statements; after round 0 each backend's recall steers its own "
        f"story.</p>"
    )
    p.append(
        "<p class='settings'>"
        + " · ".join(
            f"{k} <code>{escape(str(metrics.get(k2, '')))}</code>"
            for k, k2 in (
                ("policy", "policy"),
                ("judge", "judge"),
                ("embedder", "embedder"),
                ("seed", "seed"),
                ("variation", "variation"),
                ("cache", "cache_policy"),
            )
        )
        + "</p>"
    )
    if metrics.get("stopped"):
        p.append(f"<p class='note'>The run stopped early: {escape(metrics['stopped'])}.</p>")
    p.append("<h2>How this setting differs from the paper's</h2><ul>")
    p += [f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in SETTING]
    p.append("</ul>")

    # Table 1.
    p.append("<h2>Store size (Table 1)</h2>")
    p.append(
        _table(
            ["backend", "sediment", "sim", "total"],
            [[_name(b), m["sediment"], m["sim"], m["total"]] for b, m in backends.items()],
        )
    )
    closest = min((b for b in names if b != "consensus"), key=lambda b: backends[b]["sim"], default=None)
    if cons and closest:
        c, o = cons["sim"], backends[closest]["sim"]
        ct, ot = cons["total"], min(backends[b]["total"] for b in names if b != "consensus")
        p.append(
            f"<p>Consensus made <b>{100.0 * (o - c) / o if o else 0:.0f}% fewer sim entries</b> than the "
            f"closest per-agent design ({_name(closest)}), and its whole store is "
            f"{100.0 * (ot - ct) / ot if ot else 0:.0f}% smaller. <span class='paper'>Paper: "
            f"{PAPER['fewer_entries']}; {PAPER['source']}.</span></p>"
        )

    # Tables 2 and 8.
    p.append("<h2>Sharing and linking over sim entries (Tables 2 and 8)</h2>")
    p.append(
        _table(
            [
                "backend",
                "sim entries",
                "shared",
                "shared %",
                "3+ owners",
                "max owners",
                "linked %",
                "by-product pointers %",
                "recalls that expanded",
                "linked rows per expanding call",
            ],
            [
                [
                    _name(b),
                    m["sim"],
                    m["sim_shared"],
                    f"{m['sim_shared_pct']:.1f}%",
                    m["sim_three_plus"],
                    m["sim_max_owners"],
                    f"{m['sim_linked_pct']:.1f}%",
                    f"{m['sim_pointed_pct']:.1f}%",
                    f"{100 * m['expanded_frac']:.1f}%",
                    m["linked_per_expanding_call"],
                ]
                for b, m in backends.items()
            ],
        )
    )
    p.append(
        f"<p class='note'>Owners count only agents who appear. Linked: affiliation edges between statements "
        f"(the statements of one deposit); a baseline's pointers from its reflections, insights or "
        f"interaction chains to their evidence are counted apart.</p><p class='paper'>Paper: {PAPER['shared']}; "
        f"{PAPER['linked']}.</p>"
    )
    if cons and cons.get("judge"):
        j = cons["judge"]
        p.append("<h2>The judge against provenance</h2>")
        p.append(
            _table(
                ["merges judged", "precision", "recall", "rounds ≥ 1: merges", "precision", "recall"],
                [[j["merges"], j["precision"], j["recall"], j["sim_merges"], j["sim_precision"], j["sim_recall"]]],
            )
        )
        p.append(
            "<p class='note'>Precision: the merges whose record already held the statement's event. Recall: "
            "of the statements whose event a record already held, those merged into it. The judge never saw "
            f"the events. <span class='paper'>Paper: {PAPER['judge']}.</span></p>"
        )

    # Table 3.
    cache = metrics.get("cache") or {}
    ab = metrics.get("ablation") or {}
    if cache:
        p.append("<h2>Cache policy and merging (Table 3)</h2>")
        rows: list[list[Any]] = [
            [f"merging on, {k} cache", v["sim"], f"{v['sim_shared_pct']:.1f}%"] for k, v in cache.items()
        ]
        if ab:
            off = ab["merging_off"]
            rows.append(["merging off (one store per agent)", off["sim"], f"{off['sim_shared_pct']:.1f}%"])
        p.append(_table(["consensus", "sim entries", "sim shared %"], rows))
        if ab:
            p.append(
                f"<p>With merging off the store is <b>{ab['growth_factor']:.2f}x</b> larger and "
                f"{ab['merging_off']['shared']} records are shared. <span class='paper'>Paper: "
                f"{PAPER['ablation']}.</span></p>"
            )

    # Table 4.
    p.append("<h2>Recall and merge costs (Table 4)</h2>")
    p.append(
        _table(
            ["backend", "recall calls", "hits", "expansion rows", "amplification"],
            [[_name(b), m["recalls"], m["hits"], m["expansion_rows"], m["amplification"]] for b, m in backends.items()],
        )
    )
    if cons and cons.get("merge_cost"):
        rows = [
            [k, v["merges"], _pct(v["fraction"]), v["discarded_chars"], v["discarded_chars_per_merge"]]
            for k, v in cons["merge_cost"].items()
        ]
        p.append(
            _table(
                ["merge policy", "merges", "survivor lost a named person", "discarded characters", "per merge"], rows
            )
        )
        p.append(
            f"<p class='note'>A merge loses a name when the text it let go of names a character the text "
            f"it kept does not. <span class='paper'>Paper: {PAPER['name_loss']}.</span></p>"
        )

    # Table 5 and grounding.
    p.append("<h2>Actions per backend (Table 5)</h2>")
    kinds = ["say", "read_thread", "observe", "move", "act_on", "ponder"]
    p.append(
        _table(["backend"] + kinds, [[_name(b)] + [m["actions"].get(k, 0) for k in kinds] for b, m in backends.items()])
    )
    p.append("<h2>Grounding</h2>")
    p.append(
        _table(
            ["backend", "says", "trace to a true event", "named people right"],
            [
                [_name(b), m["grounding"]["says"], _pct(m["grounding"]["traced"]), _pct(m["grounding"]["names_right"])]
                for b, m in backends.items()
            ],
        )
    )
    p.append(
        "<p class='note'>Exact, from provenance: a say traces to a true event when the memory it retells "
        "holds one (a reflection or an insight holds none); its named people are right when each took part "
        f"in that event. <span class='paper'>Paper: {PAPER['grounding']}.</span></p>"
    )

    # Figure 3.
    p.append("<h2>Growth and ownership (Figure 3)</h2><div class='fig'>")
    p.append(
        svg.line_chart(
            {_name(b): m["growth"] for b, m in backends.items()},
            title="Entries after each round",
            xlabel="round (0 = the sedimented play)",
            ylabel="entries",
        )
    )
    p.append("</div>")
    owners_top = list((cons or first).get("owned", {}))[:14]
    if owners_top:
        p.append(
            "<div class='fig'>"
            + svg.bar_chart(
                owners_top,
                {_name(b): [m["owned"].get(a, 0) for a in owners_top] for b, m in backends.items()},
                title="Memories each agent owns",
                xlabel="agent",
                ylabel="records owned",
                slant=True,
            )
            + "</div>"
        )

    # Latency.
    p.append("<h2>Latency</h2>")
    p.append(
        _table(
            ["backend", "remember p50 ms", "remember p95 ms", "recall p50 ms", "recall p95 ms"],
            [
                [_name(b), m["remember_ms_p50"], m["remember_ms_p95"], m["recall_ms_p50"], m["recall_ms_p95"]]
                for b, m in backends.items()
            ],
        )
    )
    p.append(
        "<p class='note'>A remember is one witness's deposit, timed as the round's batch divided by its "
        "deposits; a recall is one owner-scoped query (k = 5, with expansion where the design has links). "
        f"<span class='paper'>Paper: {PAPER['latency']}.</span></p>"
    )
    bins = first.get("latency_bins", [])
    cats = [f"{b['rounds'][0]}-{b['rounds'][1]}" for b in bins]
    for key, label in (("remember_ms_p50", "remember, p50 ms"), ("recall_ms_p50", "recall, p50 ms")):
        series = {_name(b): [x[key] for x in m["latency_bins"]] for b, m in backends.items()}
        p.append(
            "<div class='fig'>"
            + svg.bar_chart(cats, series, title=f"Latency per 5 rounds: {label}", xlabel="rounds", ylabel=label)
            + "</div>"
        )

    # Horizon.
    hz = metrics.get("horizon") or {}
    if hz.get("consensus"):
        p.append("<h2>Horizon (each a run of its own)</h2>")
        cols = list(hz["consensus"])
        p.append(
            _table(
                ["consensus"] + [f"{r} rounds" for r in cols],
                [
                    ["sim entries"] + [hz["consensus"][r]["sim"] for r in cols],
                    ["sim shared"] + [f"{hz['consensus'][r]['sim_shared_pct']:.1f}%" for r in cols],
                    ["whole store shared"] + [f"{hz['consensus'][r]['shared_pct']:.1f}%" for r in cols],
                ],
            )
        )
        pcts = [hz["consensus"][r]["sim_shared_pct"] for r in cols]
        if len(pcts) > 1 and pcts[-1] < pcts[0]:
            p.append(
                "<p class='note'>Sharing over sim entries does not rise here. Retelling news to those who "
                "did not see it adds owners to older entries, but as the agents disperse, more of the new "
                "entries are moves into places where nobody else stands, seen by the mover alone.</p>"
            )
        p.append(f"<p class='paper'>Paper: {PAPER['horizon']}.</p>")

    # Graph figures.
    inter = data.interactions or data.source_interactions
    which = "after round 0" if data.interactions else "in the play"
    p.append(
        f"<h2>The agents' interaction graph ({which})</h2><div class='fig'>"
        + _interaction_figure(inter, data.agents)
        + "</div>"
    )
    p.append(
        "<p class='note'>An edge joins a speaker and a listener; its weight is how often one heard the other; "
        "colours are communities (label propagation).</p>"
    )
    if data.memory is not None and data.memory.owners:
        fig, shown, clusters = _memory_figure(data.memory, data.texts)
        p.append(f"<h2>Memory-affiliation graph ({escape(_name(data.memory_backend))})</h2>")
        p.append(
            f"<div class='fig'>{fig}</div><p class='note'>{shown:,} sim entries (the most linked), coloured by "
            f"{clusters} clusters (label propagation), the largest labelled with their most-owned record's "
            "text and owners; a node's size grows with its owners; an edge is an affiliation edge.</p>"
        )
        p.append("<h2>Shared ownership</h2>")
        if any(len(o) >= 2 for o in data.memory.owners.values()):
            p.append("<div class='fig'>" + _heatmap_figure(data.memory, data.agents, data.appear) + "</div>")
            p.append(
                "<p class='note'>Cell (a, b): records owned by both a and b, for the 20 agents who appear and "
                "own most records.</p>"
            )
        else:
            p.append(f"<p class='note'>No record of {escape(_name(data.memory_backend))} has two owners.</p>")
    p.append(
        "<p class='note'>Made by <code>agentsensus simulate</code>; the numbers are also in "
        "<code>metrics.json</code>.</p></body></html>"
    )
    return "\n".join(p)
