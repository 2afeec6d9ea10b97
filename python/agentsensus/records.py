"""The value types the Store returns: Memory, Deposit, Merge, Stats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Memory", "Deposit", "Merge", "Stats"]


@dataclass(frozen=True)
class Memory:
    """One record as seen by a reader.

    ``score`` is the similarity to the query (``None`` on expansion rows),
    ``via`` says how the record was reached: ``"hit"`` (nearest neighbour),
    ``"edge"`` (one affiliation edge from a hit), ``"candidate"`` (shown to a
    judge) or ``""`` (read with ``get``).
    """

    id: int
    text: str
    owners: frozenset[str]
    round: int
    score: Optional[float] = None
    via: str = ""


@dataclass(frozen=True)
class Deposit:
    """The outcome of one deposit: for each statement, in order, the record it
    ended in and whether it merged into one that already existed."""

    ids: list[int]
    merged: list[bool]


@dataclass(frozen=True)
class Merge:
    """One merge-log entry: ``owner`` deposited a statement that merged into
    ``survivor``; ``kept`` is the record's text afterwards and ``discarded``
    the text the merge let go of."""

    survivor: int
    kept: str
    discarded: str
    owner: str
    round: int


@dataclass(frozen=True)
class Stats:
    """Store-wide counts. ``shared``: records with two or more owners;
    ``linked``: records with at least one affiliation edge; ``agents``:
    distinct owner names the store has seen."""

    records: int
    deposits: int
    merges: int
    shared: int
    linked: int
    max_owners: int
    agents: int
