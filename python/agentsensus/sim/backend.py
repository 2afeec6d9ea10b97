"""The one protocol every long-term memory backend implements.

Equal granularity: every backend receives exactly the same deposits (at
round 0 one per witness and source step, its account of what it witnessed;
after it one per agent and round, the results of its own action), each
already split into statements with their vectors, in the same order and
rounds. So one
statement is at most one stored row in any design, and entry counts compare
by construction; what differs is only what a design does with them (merge,
reflect, summarise, grant).

A deposit is plain data: an owner name, a list of ``str`` and a float32
array. What a statement reports (its provenance) is never part of it.
``remember`` answers, per deposit, the row each statement ended in and
whether it merged into an existing row, so the simulation can keep its
provenance ledger beside the backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Item", "Stored", "Witnesses", "Recollection", "MemoryGraph", "MemoryBackend", "BACKENDS", "owner_stats"]

#: One deposit: (owner, statements, vectors of shape (len(statements), dim)).
Item = tuple[str, Sequence[str], npt.NDArray[np.float32]]

#: What ``remember`` answers per deposit: (row id per statement, merged per statement).
Stored = tuple[list[int], list[bool]]

#: Per deposit, per statement: who witnessed the event the statement reports
#: (the world's access facts: only an access-control design reads them).
Witnesses = Sequence[Sequence[frozenset[str]]]

#: The backend names, in report order.
BACKENDS = ("consensus", "generative_agents", "g_memory", "collaborative")


@dataclass(frozen=True)
class Recollection:
    """A recalled row, shaped like ``agentsensus.Memory``."""

    id: int
    text: str
    owners: frozenset[str]
    round: int
    score: float | None
    via: str = "hit"


@dataclass
class MemoryGraph:
    """A backend's rows as a graph, for the metrics and the report's figures.

    ``owners``: row id -> owner set; ``rounds``: row id -> the round it was
    made in; ``edges``: affiliation edges between statements (the paper's
    "linked"), each once with ``a < b``; ``pointers``: links a design keeps
    from its by-products or trajectories to their evidence (reflections,
    insights, interaction chains), reported apart from affiliation.
    """

    owners: dict[int, frozenset[str]] = field(default_factory=dict)
    rounds: dict[int, int] = field(default_factory=dict)
    edges: set[tuple[int, int]] = field(default_factory=set)
    pointers: set[tuple[int, int]] = field(default_factory=set)

    def link(self, a: int, b: int) -> None:
        """An affiliation edge between rows ``a`` and ``b`` (never a self-loop)."""
        if a != b:
            self.edges.add((a, b) if a < b else (b, a))

    def point(self, a: int, b: int) -> None:
        """A by-product or trajectory pointer between rows ``a`` and ``b``."""
        if a != b:
            self.pointers.add((a, b) if a < b else (b, a))


@runtime_checkable
class MemoryBackend(Protocol):
    """``remember`` a round's deposits, ``recall`` for one owner, ``stats``."""

    name: str

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """Store one round's deposits, in order; per deposit, where each statement went.
        ``witnesses``: per deposit and statement, who witnessed what it reports."""

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list:  # type: ignore[type-arg]
        """Up to ``k`` hits ``owner`` may read (``via="hit"``), then linked rows (``via="edge"``)."""

    def stats(self) -> dict[str, int]:
        """At least ``records``, ``shared``, ``three_plus``, ``max_owners``, ``linked``."""

    def graph(self) -> MemoryGraph:
        """Every row with its owners and links."""

    def close(self) -> None:
        """Release files; idempotent."""


def owner_stats(graph: MemoryGraph) -> dict[str, int]:
    """The Table 1/2 counts of a `MemoryGraph`."""
    sizes = [len(o) for o in graph.owners.values()]
    return {
        "records": len(sizes),
        "shared": sum(1 for s in sizes if s >= 2),
        "three_plus": sum(1 for s in sizes if s >= 3),
        "max_owners": max(sizes, default=0),
        "linked": len(_ends(graph.edges) & graph.owners.keys()),
        "pointed": len(_ends(graph.pointers) & graph.owners.keys()),
    }


def _ends(edges: set[tuple[int, int]]) -> set[int]:
    out: set[int] = set()
    for a, b in edges:
        out.add(a)
        out.add(b)
    return out
