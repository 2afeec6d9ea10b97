"""Collaborative Memory (Rezazadeh et al., 2025) as a memory backend.

One store, partitioned by access control: every row has one writer (its
owner) and a set of readers. Sharing grants another agent read access to a
row and never merges rows, so two witnesses of one event still hold two
rows. A row's readers are the witnesses of the event it reports (the
access facts the simulation hands to ``remember``): whoever saw it happen
may read what its writer wrote of it, and nobody else.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import numpy.typing as npt

from .backend import Item, MemoryGraph, Recollection, Stored, Witnesses, owner_stats
from .rows import VectorRows, top_k

__all__ = ["CollaborativeBackend"]


class _Ints:
    """A growable int64 array (the row positions a reader may read)."""

    def __init__(self) -> None:
        self._a = np.empty(64, dtype=np.int64)
        self.n = 0

    def extend(self, values: Sequence[int]) -> None:
        need = self.n + len(values)
        if need > len(self._a):
            grown = np.empty(max(need, 2 * len(self._a)), dtype=np.int64)
            grown[: self.n] = self._a[: self.n]
            self._a = grown
        self._a[self.n : need] = values
        self.n = need

    @property
    def array(self) -> npt.NDArray[np.int64]:
        return self._a[: self.n]


class CollaborativeBackend:
    """One table, rows with a writer and readers; recall sees readable rows."""

    name = "collaborative"

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.rows = VectorRows(dim)
        self.writers: list[str] = []
        self.readers: list[set[str]] = []
        self.texts: list[str] = []
        self.rounds: list[int] = []
        self.readable: dict[str, _Ints] = {}
        self.grants = 0

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """Write each statement as a private row, readable by the witnesses of what it reports."""
        out: list[Stored] = []
        for n, (owner, statements, vectors) in enumerate(items):
            start = len(self.texts)
            self.rows.extend(vectors)
            seen = witnesses[n] if witnesses is not None else [frozenset()] * len(statements)
            for i, t in enumerate(statements):
                readers = {owner} | set(seen[i])
                self.writers.append(owner)
                self.readers.append(readers)
                self.texts.append(t)
                self.rounds.append(round)
                for r in sorted(readers):
                    self.readable.setdefault(r, _Ints()).extend([start + i])
                self.grants += len(readers) - 1
            out.append(([p + 1 for p in range(start, len(self.texts))], [False] * len(statements)))
        return out

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Recollection]:
        """Top ``k`` rows ``owner`` may read (its own and those granted to it)."""
        idx = self.readable.get(owner)
        if idx is None or idx.n == 0:
            return []
        pos = idx.array
        # One product over the whole table beats gathering the readable rows first.
        sims = (self.rows.matrix @ np.asarray(query, dtype=np.float32))[pos]
        out = []
        for h in top_k(sims, k):
            p = int(pos[h])
            out.append(
                Recollection(p + 1, self.texts[p], frozenset((self.writers[p],)), self.rounds[p], float(sims[h]))
            )
        return out

    def stats(self) -> dict[str, int]:
        """Row counts: ``records``, ``shared``, ``three_plus``, ``max_owners``, ``linked``."""
        st = owner_stats(self.graph())
        st["granted_rows"] = sum(1 for r in self.readers if len(r) >= 2)
        st["max_readers"] = max((len(r) for r in self.readers), default=0)
        return st

    def graph(self) -> MemoryGraph:
        """Every row with its readers and links."""
        g = MemoryGraph()
        g.owners = {p + 1: frozenset((w,)) for p, w in enumerate(self.writers)}
        g.rounds = {p + 1: r for p, r in enumerate(self.rounds)}
        return g

    def close(self) -> None:
        """Nothing to release: the rows live in memory."""
        pass
