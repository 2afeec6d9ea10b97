"""Provenance: which event each statement reports, kept outside the backends.

The kernel hands a backend only ``(owner, statements, vectors)``: plain
strings and a float32 array. What each statement reports (a *fact*: an
event's ``seq`` and the clause of it) is written here, beside the backend's
answer (the record each statement ended in and whether it merged). Only the
metrics read the ledger: the judge's merge precision and recall, the rounds
records were made in, and grounding (whether what an agent said traces to a
true event and names the right people).

A retelling (an agent says what a memory holds) reports the fact that memory
holds, so a listener's account of it is the same fact as the original's. A
speaker who says the very same words again states the same fact again: the
repeated say reports the first one's facts, clause by clause.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .world import Event

__all__ = ["Fact", "Ledger", "JudgeScore"]

#: (event seq, clause index): one thing that happened.
Fact = tuple[int, int]


@dataclass
class JudgeScore:
    """Merge decisions against provenance.

    ``merges``: statements that merged; ``correct``: those whose record
    already held their fact. ``possible``: statements whose fact was already
    held by a record when they arrived (a perfect judge merges them all);
    ``found``: those that merged into such a record.
    """

    merges: int = 0
    correct: int = 0
    possible: int = 0
    found: int = 0

    @property
    def precision(self) -> float | None:
        """``correct / merges`` (``None`` before any merge)."""
        return round(self.correct / self.merges, 4) if self.merges else None

    @property
    def recall(self) -> float | None:
        """``found / possible`` (``None`` when no statement could have merged)."""
        return round(self.found / self.possible, 4) if self.possible else None


@dataclass
class Ledger:
    """Facts per record and per event, filled as deposits come back."""

    events: dict[int, Event] = field(default_factory=dict)
    aliases: dict[int, Fact] = field(default_factory=dict)  # retelling event seq -> the fact it retells
    record_facts: dict[int, Counter[Fact]] = field(default_factory=dict)
    record_round: dict[int, int] = field(default_factory=dict)  # the round a record was made in
    fact_records: dict[Fact, set[int]] = field(default_factory=dict)
    score: JudgeScore = field(default_factory=JudgeScore)
    sim_score: JudgeScore = field(default_factory=JudgeScore)  # rounds >= 1 only
    said_first: dict[tuple[tuple[str, ...], str], int] = field(default_factory=dict)  # (speakers, words) -> seq
    same_as: dict[int, int] = field(default_factory=dict)  # a repeated say's seq -> the first one's

    def fork(self) -> "Ledger":
        """An independent copy to run on from here (events and facts are immutable)."""
        return Ledger(
            dict(self.events),
            dict(self.aliases),
            {r: Counter(c) for r, c in self.record_facts.items()},
            dict(self.record_round),
            {f: set(r) for f, r in self.fact_records.items()},
            JudgeScore(**vars(self.score)),
            JudgeScore(**vars(self.sim_score)),
            dict(self.said_first),
            dict(self.same_as),
        )

    def add_events(self, events: Iterable[Event]) -> None:
        """Remember the world's events (for grounding); a say of words its speakers said before restates them."""
        for e in events:
            if e.seq in self.events:
                continue
            self.events[e.seq] = e
            if e.kind == "say" and e.actors:
                first = self.said_first.setdefault((e.actors, e.text), e.seq)
                if first != e.seq:
                    self.same_as[e.seq] = first

    def retells(self, seq: int, record: int) -> None:
        """Event ``seq`` says what ``record`` holds: it reports that record's main fact."""
        fact = self.main_fact(record)
        if fact is not None:
            self.aliases[seq] = fact

    def fact(self, seq: int, clause: int) -> Fact:
        """The fact a statement about clause ``clause`` of event ``seq`` reports."""
        if seq in self.aliases:
            return self.aliases[seq]
        return (self.same_as.get(seq, seq), clause)

    def main_fact(self, record: int) -> Fact | None:
        """The fact most of a record's statements report (``None``: a by-product)."""
        facts = self.record_facts.get(record)
        if not facts:
            return None
        return max(facts.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))[0]

    def deposited(self, facts: Sequence[Fact], ids: Sequence[int], merged: Sequence[bool], round: int) -> None:
        """One deposit came back: statement ``i`` reports ``facts[i]`` and ended in ``ids[i]``."""
        for fact, rid, was_merged in zip(facts, ids, merged):
            holders = self.fact_records.get(fact, set())
            existed = rid in self.record_facts
            scores = (self.score, self.sim_score) if round >= 1 else (self.score,)
            for s in scores:
                if holders:
                    s.possible += 1
                    s.found += int(was_merged and rid in holders)
                if was_merged and existed:
                    s.merges += 1
                    s.correct += int(fact in self.record_facts[rid])
            self.record_facts.setdefault(rid, Counter())[fact] += 1
            self.record_round.setdefault(rid, round)
            self.fact_records.setdefault(fact, set()).add(rid)

    def added(self, rid: int, round: int) -> None:
        """A by-product row (a reflection, an insight) with no fact of its own."""
        self.record_round.setdefault(rid, round)

    def event_of(self, record: int) -> Event | None:
        """The event of a record's main fact."""
        fact = self.main_fact(record)
        return None if fact is None else self.events.get(fact[0])
