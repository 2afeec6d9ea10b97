"""The report's three graph figures, as inline SVG: who talked to whom, the
consensus store's affiliation graph, and which agents share records.

Layouts are deterministic (seeded force layout, label propagation in a fixed
order), so one run's report draws the same pictures every time.
"""

from __future__ import annotations

import numpy as np

from . import svg
from .backend import MemoryGraph
from .layout import circle_layout, force_layout, label_propagation

__all__ = ["interaction_figure", "memory_figure", "heatmap_figure"]


def _community_colors(labels: list[int]) -> list[str]:
    return [svg.PALETTE[lab] if lab < 8 else svg.PALETTE[8] for lab in labels]


def interaction_figure(interactions: dict[tuple[str, str], int], agents: list[str]) -> str:
    """Who spoke to whom: agents on a ring, placed by community, edges weighted by times heard."""
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


def memory_figure(g: MemoryGraph, texts: dict[int, str], limit: int = 300) -> tuple[str, int, int]:
    """The affiliation graph of the ``limit`` most linked sim entries; returns
    (svg, entries shown, clusters)."""
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


def heatmap_figure(g: MemoryGraph, agents: list[str], appear: set[str], top: int = 20) -> str:
    """Records owned by each pair of the ``top`` agents who appear and own most."""
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
