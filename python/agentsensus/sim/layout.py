"""Graph layout, label placement and clustering for the report's figures, in numpy, seeded.

Fruchterman-Reingold for the memory-affiliation graph, a circle for the
agents' interaction graph, label propagation for the clusters, and a greedy
placement that puts each label where it overlaps no other label and no node.
Deterministic: the same graph always draws the same picture.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "Box",
    "circle_layout",
    "force_layout",
    "label_propagation",
    "text_width",
    "text_box",
    "wrap_text",
    "overlap",
    "place_labels",
]

#: An axis-aligned box on the figure: (x0, y0, x1, y1), y growing downwards.
Box = tuple[float, float, float, float]

# Advance widths in em of a wide sans-serif (DejaVu Sans, what a Linux browser
# falls back to for system-ui), rounded up: an estimate that errs wide keeps
# labels apart in narrower fonts too.
_NARROW = set("ijlI.,:;'!|()[]` ")
_SEMI = set('frtJ-"/')
_WIDE = set("mwMW@%")
_ASCENT, _LINE = 0.95, 1.2  # baseline below the box's top, and the box's height, in em


def text_width(text: str, size: float) -> float:
    """An upper estimate of ``text``'s width in pixels at font size ``size``."""
    em = 0.0
    for ch in text:
        if ch in _NARROW:
            em += 0.34
        elif ch in _SEMI:
            em += 0.46
        elif ch in _WIDE:
            em += 1.0
        elif ch.isupper() or ch.isdigit():
            em += 0.78
        else:
            em += 0.64
    return em * size


def text_box(x: float, baseline: float, text: str, size: float) -> Box:
    """The box of ``text`` drawn left-aligned at ``x`` on ``baseline``."""
    return (x, baseline - _ASCENT * size, x + text_width(text, size), baseline - _ASCENT * size + _LINE * size)


def wrap_text(text: str, width: float, size: float) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``width`` pixels (a longer word keeps its own line)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if line and text_width(trial, size) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    if line:
        lines.append(line)
    return lines


def overlap(a: Box, b: Box) -> float:
    """The area two boxes share (0 when they only touch or are apart)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(
    anchors: Sequence[tuple[float, float]],
    radii: Sequence[float],
    sizes: Sequence[tuple[float, float]],
    *,
    bounds: Box,
    obstacles: Sequence[Box] = (),
    outward: tuple[float, float] | None = None,
    gap: float = 3.0,
) -> list[Box]:
    """A box for each label, beside its anchor, overlapping no other label and no obstacle.

    Label ``i`` (``sizes[i]`` = width, height) belongs to a node at
    ``anchors[i]`` of radius ``radii[i]``; every node is an obstacle too.
    Greedy, in the given order: each label tries 16 directions around its node
    (those pointing away from ``outward``, a centre, first), then the same
    farther out, and takes the first free spot inside ``bounds``; when none is
    free it takes the spot that overlaps least.
    """
    circles = [(x - r, y - r, x + r, y + r) for (x, y), r in zip(anchors, radii)]
    blocked: list[Box] = list(obstacles) + circles
    angles = 2 * np.pi * np.arange(16) / 16
    placed: list[Box] = []
    for (x, y), r, (w, h) in zip(anchors, radii, sizes):
        prefer = 0.0
        if outward is not None and (x, y) != outward:
            prefer = float(np.arctan2(y - outward[1], x - outward[0]))
        order = sorted(angles, key=lambda a: (abs(np.angle(np.exp(1j * (a - prefer)))), a))
        best: tuple[float, Box] | None = None
        for step in range(48):
            dist = r + gap + 5.0 * step
            for a in order:
                ux, uy = float(np.cos(a)), float(np.sin(a))
                cx, cy = x + ux * dist + ux * w / 2, y + uy * dist + uy * h / 2
                box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                if box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2] or box[3] > bounds[3]:
                    continue
                cost = sum(overlap(box, o) for o in blocked)
                if cost == 0.0:
                    best = (0.0, box)
                    break
                if best is None or cost < best[0]:
                    best = (cost, box)
            if best is not None and best[0] == 0.0:
                break
        if best is None:  # nothing fits inside bounds: on the node, the reader still finds it
            best = (0.0, (x - w / 2, y - h / 2, x + w / 2, y + h / 2))
        placed.append(best[1])
        blocked.append(best[1])
    return placed


def circle_layout(n: int) -> npt.NDArray[np.float64]:
    """``n`` points on the unit circle, the first at the top."""
    angles = np.pi / 2 - 2 * np.pi * np.arange(n) / max(n, 1)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def force_layout(
    n: int, edges: Sequence[tuple[int, int]], *, iterations: int = 150, seed: int = 7, gravity: float = 0.02
) -> npt.NDArray[np.float64]:
    """Fruchterman-Reingold positions in [-1, 1]^2 for nodes ``0..n-1``."""
    if n == 0:
        return np.zeros((0, 2))
    rng = np.random.default_rng(seed)
    pos = rng.uniform(-1, 1, size=(n, 2))
    e = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    k = 1.6 * np.sqrt(4.0 / n)  # ideal distance in a 2x2 box, loosened so cliques open up
    temp = 0.3
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.linalg.norm(delta, axis=2) + 1e-9
        disp = ((k * k / dist**2)[:, :, None] * delta).sum(axis=1)  # repulsion
        if len(e):
            d = pos[e[:, 0]] - pos[e[:, 1]]
            dl = np.linalg.norm(d, axis=1)[:, None] + 1e-9
            f = d * dl / k  # attraction along edges
            np.add.at(disp, e[:, 0], -f)
            np.add.at(disp, e[:, 1], f)
        disp -= gravity * n * k * pos  # gravity packs the many small components together
        length = np.linalg.norm(disp, axis=1)[:, None] + 1e-9
        pos += disp / length * np.minimum(length, temp)
        temp *= 0.97
    pos -= pos.mean(axis=0)
    scale = np.abs(pos).max() or 1.0
    return pos / scale


def label_propagation(n: int, edges: Sequence[tuple[int, int]], *, rounds: int = 20) -> list[int]:
    """Community labels ``0..c-1`` (largest first) by synchronous-order label propagation.

    Nodes are visited in index order and take the most frequent label among
    their neighbours (ties: the smallest label), which is deterministic.
    """
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    labels = list(range(n))
    for _ in range(rounds):
        changed = False
        for v in range(n):
            if not adj[v]:
                continue
            counts: dict[int, int] = {}
            for u in adj[v]:
                counts[labels[u]] = counts.get(labels[u], 0) + 1
            best = min(counts, key=lambda lab: (-counts[lab], lab))
            if counts.get(labels[v], 0) < counts[best]:
                labels[v] = best
                changed = True
        if not changed:
            break
    sizes: dict[int, int] = {}
    for lab in labels:
        sizes[lab] = sizes.get(lab, 0) + 1
    order = {lab: i for i, lab in enumerate(sorted(sizes, key=lambda lab: (-sizes[lab], lab)))}
    return [order[lab] for lab in labels]
