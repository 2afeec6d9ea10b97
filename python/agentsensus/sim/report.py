"""The self-contained ``report.html``: tables and inline SVG figures.

It needs nothing but the file: no script, no stylesheet or font from the
network. Numbers come from the metrics dict that is also written as
``metrics.json``; the graphs come from `ReportData`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any, Mapping

from . import svg
from .backend import MemoryGraph
from .report_facts import facts_section
from .report_figures import heatmap_figure, interaction_figure, memory_figure

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
    "recall_calls": "Hamlet: 3 recall calls over the whole run (Table 4)",
    "merge_off": "merging off raised sim entries 1.5x; the baselines added 1.3-1.5x consensus's sim entries",
}

#: One sentence on each way this run's setting differs from the paper's.
SETTING = [
    (
        "policy",
        "The paper's agents were LLMs; here, unless a model is given, seeded agents compose their says "
        "from a small grammar (intentions, questions, answers, inferences, reactions, retellings) over "
        "what their short-term memory holds, so the backend changes what they say.",
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
        "As in the paper, round 0 is one account per witness of every event of the play. After it an "
        "agent deposits only the results of its own actions (what it said or did, what read_thread "
        "returned, what observe showed it); a bystander deposits nothing. A record made after round 0 "
        "is shared when two agents each deposited an equivalent statement from an action of their own, "
        "most often a speaker and someone who later read the thread. The controls below show which "
        "figures recall and merging make.",
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
    dead: set[str] | None = None  # agents dead by the end of the first backend's run (None: not known)


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


def _pct(v: Any) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


# Each section below returns its HTML fragments; render_report joins them in
# the paper's order. A section whose data the run did not produce (--quick,
# a subset of backends) returns nothing.
Backends = Mapping[str, Mapping[str, Any]]


def _head(metrics: Mapping[str, Any]) -> list[str]:
    p = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>agentsensus simulation: {escape(metrics['world'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>Four memories, one world: {escape(metrics['world'])}</h1>",
        f"<p>The whole play sedimented at round 0 ({_cell(metrics.get('source_events'))} events, every witness "
        f"depositing its own account), then {metrics['rounds']} rounds in which the play's survivors act from "
        f"what they recall ({_cell(metrics.get('events'))} new events in the first backend's run; "
        f"{_cell(metrics.get('agents'))} agents appear). "
        f"Every backend received the same source statements; after round 0 each backend's recall steers its own "
        f"story.</p>",
    ]
    settings = (
        ("policy", "policy"),
        ("judge", "judge"),
        ("embedder", "embedder"),
        ("seed", "seed"),
        ("variation", "variation"),
        ("time stamps", "timestamps"),
        ("cache", "cache_policy"),
        ("merge", "merge_policy"),
    )
    p.append(
        "<p class='settings'>"
        + " · ".join(f"{k} <code>{escape(str(metrics.get(k2, '')))}</code>" for k, k2 in settings)
        + "</p>"
    )
    if metrics.get("machine"):
        p.append(f"<p class='note machine'>{_machine(metrics['machine'], metrics.get('seconds'))}</p>")
    if metrics.get("stopped"):
        p.append(f"<p class='note'>The run stopped early: {escape(metrics['stopped'])}.</p>")
    p.append("<h2>How this setting differs from the paper's</h2><ul>")
    p += [f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in SETTING]
    p.append("</ul>")
    return p


def _machine(m: Mapping[str, Any], seconds: Any) -> str:
    """One line: where the run measured, and how busy the machine was at its start and end."""

    def load(v: Any) -> str:
        return "unknown" if not v else " / ".join(f"{x:.2f}" for x in v)

    cores = f"{m.get('cores')} logical cores"
    if m.get("usable_cores") not in (None, m.get("cores")):
        cores += f" ({m['usable_cores']} usable)"
    took = f"; the run took {seconds:,.{0 if seconds >= 10 else 1}f} s" if isinstance(seconds, (int, float)) else ""
    return escape(
        f"Machine: {m.get('cpu') or 'unknown CPU'}, {cores}, {m.get('python')} on {m.get('platform')}; "
        f"load average (1 / 5 / 15 min) {load(m.get('load_start'))} at the start, "
        f"{load(m.get('load_end'))} at the end{took}."
    )


def _store_size(backends: Backends) -> list[str]:
    """Table 1, and the fewer-entries sentence over sim entries."""
    p = [
        "<h2>Store size (Table 1)</h2>",
        _table(
            ["backend", "sediment", "sim", "total"],
            [[_name(b), m["sediment"], m["sim"], m["total"]] for b, m in backends.items()],
        ),
    ]
    cons = backends.get("consensus")
    others = [b for b in backends if b != "consensus"]
    closest = min(others, key=lambda b: backends[b]["sim"], default=None)
    if cons and closest:
        c, o = cons["sim"], backends[closest]["sim"]
        ct, ot = cons["total"], min(backends[b]["total"] for b in others)
        p.append(
            f"<p>Consensus made <b>{100.0 * (o - c) / o if o else 0:.0f}% fewer sim entries</b> than the "
            f"closest per-agent design ({_name(closest)}), and its whole store is "
            f"{100.0 * (ot - ct) / ot if ot else 0:.0f}% smaller. <span class='paper'>Paper: "
            f"{PAPER['fewer_entries']}; {PAPER['source']}.</span></p>"
        )
    return p


def _sharing(backends: Backends) -> list[str]:
    """Tables 2 and 8, over sim entries."""
    headers = [
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
    ]
    rows = [
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
    ]
    return [
        "<h2>Sharing and linking over sim entries (Tables 2 and 8)</h2>",
        _table(headers, rows),
        f"<p class='note'>Owners count only agents who appear. Linked: affiliation edges between statements "
        f"(the statements of one deposit); a baseline's pointers from its reflections, insights or "
        f"interaction chains to their evidence are counted apart.</p><p class='paper'>Paper: {PAPER['shared']}; "
        f"{PAPER['linked']}.</p>",
    ]


def _judge(backends: Backends) -> list[str]:
    """The judge's merge precision and recall against provenance."""
    cons = backends.get("consensus")
    if not cons or not cons.get("judge"):
        return []
    j = cons["judge"]
    return [
        "<h2>The judge against provenance</h2>",
        _table(
            ["merges judged", "precision", "recall", "rounds ≥ 1: merges", "precision", "recall"],
            [[j["merges"], j["precision"], j["recall"], j["sim_merges"], j["sim_precision"], j["sim_recall"]]],
        ),
        "<p class='note'>Precision: the merges whose record already held the statement's event. Recall: "
        "of the statements whose event a record already held, those merged into it. The judge never saw "
        f"the events. <span class='paper'>Paper: {PAPER['judge']}.</span></p>",
    ]


def _model(metrics: Mapping[str, Any]) -> list[str]:
    """The model's calls, failures and tokens (runs with --llm-base-url)."""
    llm = metrics.get("llm")
    if not llm:
        return []
    keys = ("calls", "errors", "malformed", "fallbacks", "prompt_tokens", "completion_tokens")
    rows = [[part] + [llm[part].get(k) for k in keys] for part in ("policy", "judge") if part in llm]
    rows.append(["total"] + [llm.get(k) for k in keys])
    return [
        "<h2>The model</h2>",
        _table(["", "calls", "errors", "malformed", "fallbacks", "prompt tokens", "completion tokens"], rows),
        "<p class='note'>Calls: HTTP requests, retries included; errors: those that failed; malformed: answers "
        "with no usable action or verdicts; fallbacks: decisions that became <code>observe</code> and "
        "statements the judge left unmerged for want of an answer.</p>",
    ]


def _judge_levels(metrics: Mapping[str, Any]) -> list[str]:
    """The judge at each variation level: its round-0 curve and its labelled pairs."""
    curve = metrics.get("judge_curve") or []
    pairs = metrics.get("judge_pairs") or []
    if not curve and not pairs:
        return []
    p = ["<h2>The judge per variation level</h2>"]
    if curve:
        rounds = any("sim_precision" in e for e in curve)
        headers = ["variation", "merges", "precision", "recall"]
        headers += ["rounds ≥ 1: precision", "recall"] if rounds else []
        rows = [
            [e["variation"], e["merges"], e["precision"], e["recall"]]
            + ([e.get("sim_precision"), e.get("sim_recall")] if rounds else [])
            for e in curve
        ]
        stamps = "with" if curve[0].get("timestamps") else "without"
        p += [
            _table(headers, rows),
            f"<p class='note'>The source sedimented again into a fresh consensus store at each level "
            f"({escape(str(curve[0].get('scope', '')))}, accounts {stamps} time stamps), its "
            "merges scored against provenance as above"
            + (f", then {curve[0].get('rounds')} rounds of the agents on that store" if rounds else "")
            + ". At 0 every witness quotes the exact words; higher "
            "levels word more accounts differently and report more speeches in indirect speech.</p>",
        ]
    if pairs:
        rows = []
        for e in pairs:
            k = e["kinds"]
            sw = k["swapped"]
            rows.append(
                [
                    e["variation"],
                    k["same"]["pairs"],
                    _pct(k["same"]["miss_rate"]),
                    k["other_speech"]["pairs"],
                    _pct(k["other_speech"]["wrong_merge_rate"]),
                    sw["pairs"],
                    _pct(sw["wrong_merge_rate"]),
                    _pct(sw["says"]["wrong_merge_rate"]),
                    _pct(sw["acts"]["wrong_merge_rate"]),
                ]
            )
        p += [
            _table(
                [
                    "variation",
                    "one speech, two witnesses",
                    "missed",
                    "two speeches, one scene",
                    "merged",
                    "roles swapped",
                    "merged",
                    "speeches",
                    "acts",
                ],
                rows,
            ),
            "<p class='note'>Labelled pairs of accounts from the play, each judged alone: two witnesses' "
            "accounts of one statement (the same fact: a judge should merge them), accounts of two "
            "neighbouring speeches of one scene, and an act or speech against the same with who did it and "
            "to whom swapped, as a third witness tells both (different facts: a judge should keep them "
            "apart).</p>",
        ]
    return p


def _cache_and_merging(metrics: Mapping[str, Any]) -> list[str]:
    """Table 3: the three cache policies with merging on, and merging off."""
    cache = metrics.get("cache") or {}
    ab = metrics.get("ablation") or {}
    if not cache:
        return []
    rows: list[list[Any]] = [
        [f"merging on, {k} cache", v["sim"], f"{v['sim_shared_pct']:.1f}%"] for k, v in cache.items()
    ]
    if ab:
        off = ab["merging_off"]
        rows.append(["merging off (the merge_off control)", off["sim"], f"{off['sim_shared_pct']:.1f}%"])
    p = ["<h2>Cache policy and merging (Table 3)</h2>", _table(["consensus", "sim entries", "sim shared %"], rows)]
    if ab:
        p.append(
            f"<p>With merging off the store is <b>{ab['growth_factor']:.2f}x</b> larger, the rounds make "
            f"<b>{ab.get('sim_factor') or 0:.2f}x</b> the sim entries, and "
            f"{ab['merging_off']['shared']} records are shared. <span class='paper'>Paper: "
            f"{PAPER['ablation']}; {PAPER['merge_off']}.</span></p>"
        )
    return p


def _costs(backends: Backends) -> list[str]:
    """Table 4: recall calls and amplification, and what each merge policy let go of."""
    rows = []
    for b, m in backends.items():
        t = m.get("recall") or {}
        kinds = ", ".join(f"{k} {v}" for k, v in (t.get("by_kind") or {}).items()) or "-"
        rows.append(
            [
                _name(b),
                t.get("calls", m["recalls"]),
                kinds,
                t.get("hits", m["hits"]),
                t.get("expansion_rows", m["expansion_rows"]),
                t.get("hits_plus_expansion"),
                t.get("amplification", m["amplification"]),
                _pct(t.get("q_in_hits")),
                _pct(t.get("q_in_expansion")),
            ]
        )
    p = [
        "<h2>Recall and merge costs (Table 4)</h2>",
        _table(
            [
                "backend",
                "recall calls",
                "why",
                "hits",
                "expansion rows",
                "hits + expansion",
                "amplification",
                "q in hits",
                "q in exp. only",
            ],
            rows,
        ),
        "<p class='note'>A recall is made when a decision lacks something its short-term memory does not "
        "hold (<i>stm</i>), or by the ponder action. <i>q in hits</i>: of the recalls about a person (where "
        "is Laertes?), the share whose hits name that person; <i>q in exp. only</i>: the share that found "
        f"the person only through expansion. <span class='paper'>Paper: {PAPER['recall_calls']}.</span></p>",
    ]
    cons = backends.get("consensus")
    if cons and cons.get("merge_cost"):
        rows = [
            [
                k,
                v["merges"],
                _pct(v.get("core_fraction")),
                _pct(v.get("principal")),
                _pct(v["fraction"]),
                v["discarded_chars"],
                v["discarded_chars_per_merge"],
            ]
            for k, v in cons["merge_cost"].items()
        ]
        p.append(
            _table(
                [
                    "merge policy",
                    "merges",
                    "name lost from the reported core",
                    "principal lost",
                    "name lost, frames included",
                    "discarded characters",
                    "per merge",
                ],
                rows,
            )
        )
        p.append(
            "<p class='note'>A merge loses a name when the text it let go of names a character the text it "
            "kept does not: over the reported cores (what was said or done, the paper's measure), and over "
            'whole texts, where a first-person frame ("I told Horatio" against "Hamlet told me") counts '
            "too. <i>Principal</i>: the event's first doer or speaker. "
            f"<span class='paper'>Paper: {PAPER['name_loss']}.</span></p>"
        )
    return p


def _actions_and_grounding(backends: Backends) -> list[str]:
    """Table 5, what the says were, and how much of them drew on memory."""
    kinds = ["say", "read_thread", "observe", "move", "act_on", "ponder"]
    forms = ["retelling", "intention", "question", "answer", "inference", "reaction", "other"]
    return [
        "<h2>Actions per backend (Table 5)</h2>",
        _table(
            ["backend"] + kinds, [[_name(b)] + [m["actions"].get(k, 0) for k in kinds] for b, m in backends.items()]
        ),
        "<h2>What the agents said</h2>",
        _table(
            ["backend"] + forms + ["retellings"],
            [
                [_name(b)]
                + [(m.get("says") or {}).get("forms", {}).get(f, 0) for f in forms]
                + [f"{(m.get('says') or {}).get('retelling_pct', 0):.1f}%"]
                for b, m in backends.items()
            ],
        ),
        "<h2>Grounding</h2>",
        _table(
            ["backend", "says", "drew on a recalled memory", "of those, trace to a true event", "named people right"],
            [
                [
                    _name(b),
                    m["grounding"]["says"],
                    _pct(m["grounding"].get("drew_on_memory")),
                    _pct(m["grounding"]["traced"]),
                    _pct(m["grounding"]["names_right"]),
                ]
                for b, m in backends.items()
            ],
        ),
        "<p class='note'>Exact, from provenance: a say draws on memory when it is built on a row a recall "
        "returned (a retelling, an inference, an answer from memory); it traces to a true event when that "
        "row holds one (a reflection or an insight holds none); its named people are right when each took "
        f"part in that event. <span class='paper'>Paper: {PAPER['grounding']}.</span></p>",
    ]


def _controls(metrics: Mapping[str, Any]) -> list[str]:
    """The consensus store beside its two controls: which figures the mechanisms make."""
    controls = metrics.get("controls") or {}
    main = (metrics.get("backends") or {}).get("consensus")
    if not controls or main is None:
        return []
    runs = [("consensus", main)] + [(f"control: {c}", r["consensus"]) for c, r in controls.items()]
    kinds = ["say", "read_thread", "observe", "move", "act_on", "ponder"]
    return [
        "<h2>Controls: which figures memory makes</h2>",
        _table(
            ["run", "sim entries", "sim shared", "3+ owners", "recall calls", "retellings"] + kinds,
            [
                [
                    name,
                    r["sim"],
                    f"{r['sim_shared_pct']:.1f}%",
                    r["sim_three_plus"],
                    r["recalls"],
                    f"{(r.get('says') or {}).get('retelling_pct', 0):.1f}%",
                ]
                + [r["actions"].get(k, 0) for k in kinds]
                for name, r in runs
            ],
        ),
        "<p class='note'><i>recall_off</i>: the same sedimented store, but every recall returns nothing, so "
        "agents act from their short-term memory alone. <i>merge_off</i>: a store that never merges, not "
        "even identical text, with the same affiliation edges and recall. A figure that stays put when a "
        "mechanism is off does not come from that mechanism.</p>",
    ]


def _growth(backends: Backends) -> list[str]:
    """Figure 3: entries per round, and the records each agent owns."""
    chart = svg.line_chart(
        {_name(b): m["growth"] for b, m in backends.items()},
        title="Entries after each round",
        xlabel="round (0 = the sedimented play)",
        ylabel="entries",
    )
    p = ["<h2>Growth and ownership (Figure 3)</h2>", f"<div class='fig'>{chart}</div>"]
    src = "consensus" if "consensus" in backends else next(iter(backends), "")
    owned = backends[src].get("owned", {}) if src else {}
    owners_top = list(owned)[:14]
    if owners_top:
        title = "Memories each agent owns" + (
            f" (the {len(owners_top)} of {len(owned)} who own most)" if len(owners_top) < len(owned) else ""
        )
        bars = svg.bar_chart(
            owners_top,
            {_name(b): [m["owned"].get(a, 0) for a in owners_top] for b, m in backends.items()},
            title=title,
            xlabel="agent",
            ylabel="records owned",
            slant=True,
        )
        p.append(f"<div class='fig'>{bars}</div>")
        who = (
            f"the {len(owners_top)} of {len(owned)} agents who own most"
            if len(owners_top) < len(owned)
            else f"all {len(owned)} agents who own a record"
        )
        p.append(f"<p class='note'>Records owned, in each backend, by {who} in {escape(_name(src))}.</p>")
    return p


def _latency(backends: Backends) -> list[str]:
    """Remember and recall latency, overall and per 5 rounds."""
    p = [
        "<h2>Latency</h2>",
        _table(
            ["backend", "remember p50 ms", "remember p95 ms", "recall p50 ms", "recall p95 ms"],
            [
                [_name(b), m["remember_ms_p50"], m["remember_ms_p95"], m["recall_ms_p50"], m["recall_ms_p95"]]
                for b, m in backends.items()
            ],
        ),
        "<p class='note'>A remember is one witness's deposit, timed as the round's batch divided by its "
        "deposits; a recall is one owner-scoped query (k = 5, with expansion where the design has links). "
        f"<span class='paper'>Paper: {PAPER['latency']}.</span></p>",
    ]
    first = next(iter(backends.values()), {})
    cats = [f"{b['rounds'][0]}-{b['rounds'][1]}" for b in first.get("latency_bins", [])]
    for key, label in (("remember_ms_p50", "remember, p50 ms"), ("recall_ms_p50", "recall, p50 ms")):
        series = {_name(b): [x[key] for x in m["latency_bins"]] for b, m in backends.items()}
        chart = svg.bar_chart(cats, series, title=f"Latency per 5 rounds: {label}", xlabel="rounds", ylabel=label)
        p.append(f"<div class='fig'>{chart}</div>")
    return p


def _horizon(metrics: Mapping[str, Any]) -> list[str]:
    """The horizon re-runs of the consensus store, each a run of its own, over policy seeds."""
    horizon = metrics.get("horizon") or {}
    hz = horizon.get("consensus")
    if not hz:
        return []
    cols = list(hz)
    p = [
        "<h2>Horizon (each a run of its own)</h2>",
        _table(
            ["consensus, seed " + str(metrics.get("seed", 0))] + [f"{r} rounds" for r in cols],
            [
                ["sim entries"] + [hz[r]["sim"] for r in cols],
                ["sim shared"] + [f"{hz[r]['sim_shared_pct']:.1f}%" for r in cols],
                ["whole store shared"] + [f"{hz[r]['shared_pct']:.1f}%" for r in cols],
            ],
        ),
    ]
    seeds = horizon.get("seeds") or {}
    summary = seeds.get("consensus") or {}
    if summary and len(seeds.get("seeds", [])) > 1:
        rs = list(summary)
        p.append(
            _table(
                [f"mean ± sd over policy seeds {', '.join(map(str, seeds['seeds']))}"] + [f"{r} rounds" for r in rs],
                [
                    ["sim entries"] + [f"{summary[r]['sim']['mean']:.1f} ± {summary[r]['sim']['sd']:.1f}" for r in rs],
                    ["sim shared %"]
                    + [
                        f"{summary[r]['sim_shared_pct']['mean']:.1f} ± {summary[r]['sim_shared_pct']['sd']:.1f}"
                        for r in rs
                    ],
                ],
            )
        )
        rises = seeds.get("sharing_rises")
        p.append(
            "<p>Sharing over sim entries "
            + ("<b>rises</b> with the horizon" if rises else "<b>does not rise</b> with the horizon")
            + " (mean over the seeds). The paper's trend is a claim this run tests, not a target.</p>"
        )
    p.append(f"<p class='paper'>Paper: {PAPER['horizon']}.</p>")
    return p


def _graphs(data: ReportData) -> list[str]:
    """The interaction graph, the affiliation graph and the shared-ownership heatmap."""
    inter = data.interactions or data.source_interactions
    which = "after round 0" if data.interactions else "in the play"
    people = interaction_figure(inter, data.agents, data.appear, data.dead, which)
    p = [
        f"<h2>The agents' interaction graph ({which})</h2><div class='fig'>{people.svg}</div>",
        f"<p class='note'>{people.caption}</p>",
    ]
    g = data.memory
    if g is None or not g.owners:
        return p
    backend = _name(data.memory_backend)
    mem = memory_figure(g, data.texts, backend=backend)
    p.append(f"<h2>Memory-affiliation graph ({escape(backend)})</h2>")
    p.append(f"<div class='fig'>{mem.svg}</div><p class='note'>{mem.caption}</p>")
    p.append(f"<h2>Shared ownership ({escape(backend)})</h2>")
    if any(len(o) >= 2 for o in g.owners.values()):
        heat = heatmap_figure(g, data.agents, data.appear, backend=backend)
        p.append(f"<div class='fig'>{heat.svg}</div><p class='note'>{heat.caption}</p>")
    else:
        p.append(f"<p class='note'>No record of {escape(backend)} has two owners.</p>")
    return p


def render_report(metrics: Mapping[str, Any], data: ReportData) -> str:
    """The whole report as one HTML string, its sections in the paper's order."""
    backends: Backends = metrics["backends"]
    sections = [
        _head(metrics),
        _store_size(backends),
        _sharing(backends),
        _judge(backends),
        _controls(metrics),
        facts_section(metrics),
        _model(metrics),
        _judge_levels(metrics),
        _cache_and_merging(metrics),
        _costs(backends),
        _actions_and_grounding(backends),
        _growth(backends),
        _latency(backends),
        _horizon(metrics),
        _graphs(data),
        [
            "<p class='note'>Made by <code>agentsensus simulate</code>; the numbers are also in "
            "<code>metrics.json</code>.</p></body></html>"
        ],
    ]
    return "\n".join(part for section in sections for part in section)
