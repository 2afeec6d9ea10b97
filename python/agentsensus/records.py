"""The value types the Store returns: Memory, Deposit, Merge, Stats, Change."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Optional

from ._core import memory_from as _memory_from

__all__ = ["Memory", "Deposit", "Merge", "Stats", "Change", "JudgeRequest", "Supersedes"]


# Invariant: Memory is a slotted frozen dataclass with no __post_init__ and no
# derived field, so an instance is its fields and nothing else. The recall
# binding (bindings/memory_bindings.cpp) builds instances by writing exactly
# these slots, in this order, and refuses a class whose fields are not slots;
# a field added here must be added there (tests/test_recall_threads.py checks
# the two agree). Slots make a Memory one allocation with no per-field
# attribute lookup, which is most of what building a recall's answer costs.
@dataclass(frozen=True, slots=True)
class Memory:
    """One record as seen by a reader.

    ``score`` is the similarity to the query (``None`` on expansion rows),
    ``via`` says how the record was reached: ``"hit"`` (nearest neighbour),
    ``"edge"`` (one affiliation edge from a hit), ``"candidate"`` (shown to a
    judge) or ``""`` (read with ``get``).

    ``metadata`` is the reading owner's metadata of the record (``recall``,
    ``get(id, owner=...)``; ``None`` when it gave none), ``created_at`` and
    ``updated_at`` the record's times as UTC datetimes (``None`` for records
    written before the store kept times).

    ``lexical_score`` is the record's BM25 score for the statement or query
    text (the lexical index: shared words, rarer ones weighing more; 0.0 when
    no word is shared) on a deposit's candidates and on
    ``recall(..., lexical=True)``; ``None`` elsewhere.

    ``supersedes`` and ``superseded_by`` link the record into its chain of
    versions (a judge's `Supersedes` verdict; ``None``: no link).
    ``round`` is the round it was made, its ``valid_from``; ``valid_until``
    is the round of the record that superseded it (``None`` while nothing
    has). Which records are current is each owner's: ``recall`` leaves out a
    record once the reading owner holds a later one of its chain.
    """

    id: int
    text: str
    owners: frozenset[str]
    round: int
    score: Optional[float] = None
    via: str = ""
    metadata: Optional[dict[str, Any]] = field(default=None, hash=False)
    created_at: Optional[datetime.datetime] = None
    updated_at: Optional[datetime.datetime] = None
    lexical_score: Optional[float] = None
    supersedes: Optional[int] = None
    superseded_by: Optional[int] = None
    valid_until: Optional[int] = None

    @property
    def valid_from(self) -> int:
        """The round the record's validity starts: the round it was made."""
        return self.round


def candidate(rid: int, text: str, owners: frozenset[str], rnd: int, score: float, lexical: Optional[float]) -> Memory:
    """A judge's candidate: ``Memory(rid, text, owners, rnd, score,
    "candidate", lexical_score=lexical)``, made by the binding as recall
    makes its answers (see the invariant above). A deposit builds up to 16
    per statement, and the frozen dataclass's checked ``__init__`` was a
    tenth of a judged deposit's CPU."""
    return _memory_from(  # type: ignore[no-any-return]
        Memory, (rid, text, owners, rnd, score, "candidate", None, None, None, lexical, None, None, None)
    )


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


@dataclass(frozen=True)
class Change:
    """One event of a record's history (``Store.history``), oldest first:
    ``"ADD"`` (``owner`` made the record with text ``new``), ``"UPDATE"``
    (the record's text went from ``old`` to ``new``, by ``owner``'s merge or
    update) or ``"MERGE"`` (``owner``'s statement merged in; the text stayed
    ``new``), and the record's links in its chain of versions:
    ``"SUPERSEDES"`` (``old`` the text of the record it superseded, ``new``
    its own) and ``"SUPERSEDED"`` (``old`` its text, ``new`` that of the
    record that superseded it), each with the newer record's maker and
    round. ``at`` is known for the ``"ADD"`` of records the store timed;
    the merge log, which the rest is read from, keeps no times."""

    event: str
    old: Optional[str]
    new: str
    owner: str
    round: int
    at: Optional[datetime.datetime] = None


@dataclass(frozen=True)
class Supersedes:
    """A judge's third verdict: the statement is a newer state of the same
    subject as candidate ``id`` ("Alice moved to Berlin" after "Alice lives
    in Paris"), not the same fact. The statement becomes a new record that
    supersedes ``id`` (or, when something already superseded ``id``, the
    last record of that chain). For each owner, the older record stops being
    current once that owner holds the newer one: another owner of the old
    record keeps it as current until its own statement ends in the newer."""

    id: int


@dataclass(frozen=True)
class JudgeRequest:
    """One statement to judge: its text, who deposited it, and the candidate
    records: ``Memory`` with ``score`` (the similarity) and ``lexical_score``
    (BM25 over shared words) set, the vector candidates best first by
    ``score``, then the lexical ones best first by ``lexical_score`` (their
    ``score`` may be below ``min_similarity``)."""

    statement: str
    owner: str
    candidates: list[Memory]
