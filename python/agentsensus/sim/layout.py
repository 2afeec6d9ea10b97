"""Graph layout and clustering for the report's figures, in numpy, seeded.

Fruchterman-Reingold for the memory-affiliation graph, a circle for the
agents' interaction graph, label propagation for the clusters. Deterministic:
the same graph always draws the same picture.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["circle_layout", "force_layout", "label_propagation"]


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
