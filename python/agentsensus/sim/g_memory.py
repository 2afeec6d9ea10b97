"""G-Memory (Zhang et al., 2025) as a memory backend, in two tiers.

Interaction tier: each statement is a row owned by its writer; the rows of
one deposit are chained in order (the interaction trajectory). Insight tier:
once an owner has written ``insight_every`` rows since its last insight, an
insight node summarising them is added, pointing back to each of them.
Recall searches the owner's rows and insights together, then follows one hop:
from a hit insight to its rows, from a hit row to its insights and trajectory
neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .backend import Item, MemoryGraph, Recollection, Stored, Witnesses, owner_stats
from .rows import VectorRows, top_k
from .words import top_words

__all__ = ["GMemoryBackend", "default_insight"]


def default_insight(texts: Sequence[str]) -> str:
    """A deterministic insight: the topics a run of interactions kept to."""
    topics = top_words(texts, 4)
    return "Insight: these exchanges turned on " + (", ".join(topics) if topics else "little") + "."


@dataclass
class _Owner:
    rows: VectorRows
    ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)  # interaction row ids since the last insight
    pos: dict[int, int] = field(default_factory=dict)  # row id -> position in ``rows``


class GMemoryBackend:
    """Interaction rows plus insight nodes that point back to their rows."""

    name = "g_memory"

    def __init__(
        self,
        embed: Callable[[list[str]], npt.NDArray[np.float32]],
        dim: int,
        *,
        insight: Callable[[Sequence[str]], str] = default_insight,
        insight_every: int = 12,
    ) -> None:
        self.embed, self.dim = embed, dim
        self.insight, self.insight_every = insight, insight_every
        self.owners: dict[str, _Owner] = {}
        self.graph_ = MemoryGraph()
        self.adjacency: dict[int, set[int]] = {}
        self.texts: dict[int, str] = {}
        self.insights = 0
        self._next_id = 1

    def _owner(self, owner: str) -> _Owner:
        if owner not in self.owners:
            self.owners[owner] = _Owner(VectorRows(self.dim))
        return self.owners[owner]

    def _link(self, a: int, b: int) -> None:
        # Trajectory and insight links point to evidence: no affiliation between statements.
        self.graph_.point(a, b)
        self.adjacency.setdefault(a, set()).add(b)
        self.adjacency.setdefault(b, set()).add(a)

    def _append(self, o: _Owner, owner: str, texts: Sequence[str], vectors: npt.ArrayLike, round: int) -> list[int]:
        o.rows.extend(vectors)
        ids = list(range(self._next_id, self._next_id + len(texts)))
        self._next_id += len(texts)
        for i, t in zip(ids, texts):
            o.pos[i] = len(o.ids)
            o.ids.append(i)
            o.texts.append(t)
            o.rounds.append(round)
            self.texts[i] = t
            self.graph_.owners[i] = frozenset((owner,))
            self.graph_.rounds[i] = round
        return ids

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """Add interaction rows; add an insight for every owner that is due."""
        touched: list[str] = []
        out: list[Stored] = []
        for owner, statements, vectors in items:
            o = self._owner(owner)
            ids = self._append(o, owner, statements, vectors, round)
            out.append((ids, [False] * len(ids)))
            for a, b in zip(ids, ids[1:]):
                self._link(a, b)
            o.pending.extend(ids)
            if owner not in touched:
                touched.append(owner)
        due = [w for w in touched if len(self.owners[w].pending) >= self.insight_every]
        if not due:
            return out
        texts = [self.insight([self.texts[i] for i in self.owners[w].pending]) for w in due]
        vectors = self.embed(texts)  # one batch for the round's insights
        for w, text, vec in zip(due, texts, vectors):
            o = self.owners[w]
            (node,) = self._append(o, w, [text], vec[None, :], round)
            for row in o.pending:
                self._link(node, row)
            o.pending = []
            self.insights += 1
        return out

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Recollection]:
        """Top ``k`` of the owner's rows and insights, then one hop along links."""
        o = self.owners.get(owner)
        if o is None or not o.ids:
            return []
        sims = o.rows.matrix @ np.asarray(query, dtype=np.float32)
        hits = top_k(sims, k)
        pos = o.pos
        out: list[Recollection] = []
        seen: set[int] = set()
        for p in hits:
            i = o.ids[p]
            seen.add(i)
            out.append(Recollection(i, o.texts[p], frozenset((owner,)), o.rounds[p], float(sims[p])))
        for p in hits:
            for j in sorted(self.adjacency.get(o.ids[p], ())):
                if j not in seen and j in pos:
                    seen.add(j)
                    q = pos[j]
                    out.append(Recollection(j, o.texts[q], frozenset((owner,)), o.rounds[q], None, "edge"))
        return out

    def stats(self) -> dict[str, int]:
        """Row counts: ``records``, ``shared``, ``three_plus``, ``max_owners``, ``linked``."""
        st = owner_stats(self.graph_)
        st["insights"] = self.insights
        return st

    def graph(self) -> MemoryGraph:
        """Every row with its owners and links."""
        return self.graph_

    def close(self) -> None:
        """Nothing to release: the graph lives in memory."""
        pass
