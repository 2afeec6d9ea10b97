"""The control runs: the consensus design with one mechanism switched off.

A figure that the mechanism makes moves when the mechanism is off; a figure
that stays put comes from how the world was built. Two controls run beside
the consensus store:

- ``recall_off`` (`RecallOff`): the same store, but every recall
  returns nothing. Agents then act from their short-term memory alone.
- ``merge_off`` (`NoMergeBackend`): the consensus design with its
  merge step removed: every statement is a row of its own, owned by its
  writer alone, even an identical text (``judges.never`` still lets the
  engine merge identical normalized text, so the control does not use the
  engine). The statements of one deposit are joined pairwise by affiliation
  edges, and recall is the engine's: the ``k`` nearest rows the owner owns
  (an exact scan, as the simulation's stores are searched), then one hop
  along the edges to rows it also owns.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from .backend import Item, MemoryGraph, Recollection, Stored, Witnesses, owner_stats
from .rows import VectorRows, top_k

__all__ = ["CONTROLS", "RecallOff", "NoMergeBackend"]

#: The control runs, in report order.
CONTROLS = ("recall_off", "merge_off")


class RecallOff:
    """A backend whose recall returns nothing; everything else is the wrapped backend's."""

    def __init__(self, backend: Any) -> None:
        self.inner = backend
        self.name = str(backend.name)

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """As the wrapped backend."""
        return list(self.inner.remember(items, round, witnesses=witnesses))

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Any]:
        """Nothing, ever."""
        return []

    def recall_many(self, queries: Sequence[tuple[str, Any]], k: int) -> list[list[Any]]:
        """Nothing for each (here, not the wrapped backend's through ``__getattr__``)."""
        return [[] for _ in queries]

    def __getattr__(self, name: str) -> Any:
        # stats, graph, records, merge_log, text_of, close: the wrapped backend's.
        return getattr(self.inner, name)


class NoMergeBackend:
    """Every statement its own row; affiliation edges within a deposit; owner-scoped recall plus one hop."""

    name = "consensus"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rows = VectorRows(dim)
        self.writers: list[str] = []
        self.texts: list[str] = []
        self.rounds: list[int] = []
        self.own: dict[str, list[int]] = {}  # owner -> its row positions, ascending
        self.adjacency: dict[int, set[int]] = {}
        self.g = MemoryGraph()

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """Each statement becomes a row; the rows of one deposit are joined pairwise."""
        out: list[Stored] = []
        for owner, statements, vectors in items:
            positions = list(self.rows.extend(vectors))
            for p, text in zip(positions, statements):
                self.writers.append(owner)
                self.texts.append(text)
                self.rounds.append(round)
                self.own.setdefault(owner, []).append(p)
                self.g.owners[p + 1] = frozenset((owner,))
                self.g.rounds[p + 1] = round
            for a in positions:
                for b in positions:
                    if a < b:
                        self.adjacency.setdefault(a, set()).add(b)
                        self.adjacency.setdefault(b, set()).add(a)
                        self.g.link(a + 1, b + 1)
            out.append(([p + 1 for p in positions], [False] * len(positions)))
        return out

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Recollection]:
        """The ``k`` nearest of the owner's rows, then their neighbours it owns (ascending), no repeats."""
        mine = self.own.get(owner)
        if not mine:
            return []
        pos = np.asarray(mine, dtype=np.int64)
        sims = self.rows.matrix[pos] @ np.asarray(query, dtype=np.float32)
        out: list[Recollection] = []
        seen: set[int] = set()
        hits = [int(pos[h]) for h in top_k(sims, k)]
        for h, p in zip(top_k(sims, k), hits):
            seen.add(p)
            out.append(Recollection(p + 1, self.texts[p], frozenset((owner,)), self.rounds[p], float(sims[h])))
        for p in hits:
            for q in sorted(self.adjacency.get(p, ())):
                if q not in seen and self.writers[q] == owner:
                    seen.add(q)
                    out.append(Recollection(q + 1, self.texts[q], frozenset((owner,)), self.rounds[q], None, "edge"))
        return out

    def records(self) -> int:
        """The number of rows."""
        return len(self.texts)

    def stats(self) -> dict[str, int]:
        """Row counts: ``records``, ``shared`` (always 0), ``three_plus``, ``max_owners``, ``linked``."""
        return owner_stats(self.g)

    def graph(self) -> MemoryGraph:
        """Every row with its one owner and its edges."""
        return self.g

    def merge_log(self) -> list[Any]:
        """Nothing merges."""
        return []

    def text_of(self, rid: int) -> str:
        """The text of row ``rid``."""
        return self.texts[rid - 1]

    def close(self) -> None:
        """Nothing to release: the rows live in memory."""
