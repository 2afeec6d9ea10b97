"""The report's three graph figures, as inline SVG with their captions: who
talked to whom, the consensus store's affiliation graph, and which agents
share records.

Layouts are deterministic (seeded force layout, label propagation in a fixed
order), so one run's report draws the same pictures every time. Every number
a caption states is counted from the data the figure draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np

from . import svg
from .backend import MemoryGraph
from .layout import circle_layout, force_layout, label_propagation

__all__ = ["Figure", "interaction_figure", "memory_figure", "heatmap_figure"]

_SILENT = "#bbbbbb"


@dataclass(frozen=True)
class Figure:
    """One figure: its inline SVG and its caption (HTML), the caption's numbers taken from what is drawn."""

    svg: str
    caption: str


def _community_colors(labels: list[int]) -> list[str]:
    return [svg.PALETTE[lab] if lab < 8 else svg.PALETTE[8] for lab in labels]


def _names(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(escape(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def interaction_figure(
    interactions: dict[tuple[str, str], int],
    agents: list[str],
    appear: set[str] | None = None,
    dead: set[str] | None = None,
    when: str = "after round 0",
) -> Figure:
    """Who spoke to whom: everyone who appears on a ring, placed by community, edges weighted by times heard.

    ``appear``: the agents to draw (default: those in ``interactions``); one
    who never spoke or listened ``when`` is drawn as a grey ring with no edge,
    and the caption names them and how many of them ``dead`` holds.
    """
    weights: dict[tuple[str, str], int] = {}
    for (a, b), n in interactions.items():
        key = (a, b) if a < b else (b, a)
        weights[key] = weights.get(key, 0) + n
    talked = {a for k in weights for a in k}
    everyone = set(appear or ()) | talked
    order_of = {a: i for i, a in enumerate(agents)}
    names = sorted(everyone, key=lambda a: (order_of.get(a, len(agents)), a))
    if not names:
        return Figure('<p class="note">No one appears.</p>', "")
    index = {a: i for i, a in enumerate(names)}
    edges = [(index[a], index[b]) for a, b in weights]
    degree = np.zeros(len(names))
    for (a, b), n in weights.items():
        degree[index[a]] += n
        degree[index[b]] += n
    communities = label_propagation(len(names), edges)
    silent = [a for a in names if a not in talked]
    # Members of a community sit together on the circle; the silent ones close the ring.
    order = sorted(range(len(names)), key=lambda i: (names[i] not in talked, communities[i], i))
    ring = circle_layout(len(names))
    pos = np.zeros_like(ring)
    for slot, i in enumerate(order):
        pos[i] = ring[slot]
    sizes = 4 + 10 * np.sqrt(degree / max(degree.max(), 1))
    coms = sorted({communities[index[a]] for a in talked})
    colors = [_SILENT if a not in talked else _community_colors(communities)[i] for i, a in enumerate(names)]
    legend = [(svg.PALETTE[c] if c < 8 else svg.PALETTE[8], f"community {n + 1}") for n, c in enumerate(coms[:8])]
    if silent:
        legend.append((_SILENT, f"no speech {when} ({len(silent)})"))
    rename = {c: n for n, c in enumerate(coms)}
    fig = svg.graph(
        pos,
        edges,
        title="Who spoke to whom",
        labels=names,
        colors=colors,
        sizes=[3.5 if a not in talked else float(sizes[i]) for i, a in enumerate(names)],
        hollow=[a not in talked for a in names],
        tips=[
            f"{a}: {int(degree[i])} utterances heard or spoken"
            + (f", community {rename[communities[i]] + 1}" if a in talked else f", silent {when}")
            for i, a in enumerate(names)
        ],
        edge_weights=[float(n) for n in weights.values()],
        legend=legend,
    )
    heard = sum(interactions.values())
    caption = (
        f"All {_plural(len(names), 'agent')} who appear. An edge joins a speaker and a listener; its weight is how "
        f"often one heard the other ({heard:,} times in all, {when}); colours are "
        f"{_plural(len(coms), 'community', 'communities')} (label propagation)."
    )
    if silent:
        died = [a for a in silent if dead and a in dead]
        caption += (
            f" {len(talked)} of them spoke or listened {when}; the other {len(silent)}, drawn as grey rings "
            f"without edges, did not: {_names(silent)}" + (f" ({len(died)} of them died)." if dead is not None else ".")
        )
    return Figure(fig, caption)


def memory_figure(g: MemoryGraph, texts: dict[int, str], limit: int = 300, backend: str = "") -> Figure:
    """The affiliation graph of the ``limit`` most linked sim entries (all records if none is a sim entry)."""
    sim = sorted(i for i in g.owners if g.rounds.get(i, 0) >= 1)
    ids = sim or sorted(g.owners)
    what = "sim entries" if sim else "records"
    total = len(ids)
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
        f"record {rid}: {len(g.owners[rid])} owner(s): {', '.join(sorted(g.owners[rid]))}: {texts.get(rid, '')}"
        for rid in ids
    ]
    notes = []
    clusters = len(set(labels))
    for c in range(min(clusters, 6)):
        members = [i for i, lab in enumerate(labels) if lab == c]
        if len(members) < 3:
            continue
        # A cluster is named by its most-owned member's whole text and that member's owners.
        top = max(members, key=lambda i: (len(g.owners[ids[i]]), -ids[i]))
        owners = sorted(g.owners[ids[top]])
        cx, cy = pos[members].mean(axis=0)
        text = " ".join(texts.get(ids[top], "?").split())
        notes.append(
            (
                float(cx),
                float(cy),
                f"{len(members)} entries: \u201c{text}\u201d (owned by {', '.join(owners)})",
                colors[members[0]],
            )
        )
    fig = svg.graph(pos, edges, title="Memory-affiliation graph", colors=colors, sizes=sizes, tips=tips, notes=notes)
    shown = f"all {total:,} {what}" if len(ids) == total else f"the {len(ids):,} most linked of {total:,} {what}"
    caption = (
        f"{shown.capitalize()}{' of ' + escape(backend) if backend else ''}, coloured by "
        f"{_plural(clusters, 'cluster')} (label propagation); "
        + (
            f"{_plural(len(notes), 'cluster')} of 3 entries or more among the {min(clusters, 6)} largest "
            f"{'is' if len(notes) == 1 else 'are'} numbered, and labelled under the graph with its most-owned "
            "record's whole text and owners; "
            if notes
            else "no cluster has 3 entries, so none is labelled; "
        )
        + "a node's size grows with its owners; an edge is an affiliation edge."
    )
    return Figure(fig, caption)


def heatmap_figure(g: MemoryGraph, agents: list[str], appear: set[str], top: int = 20, backend: str = "") -> Figure:
    """Records owned by each pair of the ``top`` agents who appear and own most, in ``backend``'s store."""
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
    title = "Records shared by each pair of agents" + (f": {backend}" if backend else "")
    fig = svg.heatmap(m, chosen, title=title)
    who = (
        f"all {_plural(len(chosen), 'agent')} who appear and own a record"
        if len(chosen) == len(counts)
        else f"the {len(chosen)} agents who own most records (of the {len(counts)} who appear and own one)"
    )
    caption = (
        f"Cell (a, b): records of {escape(backend or 'the store')} owned by both a and b, for {who}. "
        f"The shade is the square root of the count (the legend marks whole counts), so one shared record "
        f"still shows beside the largest, {int(m.max()) if m.size else 0:,}."
    )
    return Figure(fig, caption)
