"""Facts of the world's state that events change: where someone is, whether they live.

An entrance puts its movers in a place, an exit takes them out of it, a
death (an act whose ``dies`` names someone) ends a life. Each such change is
a *state fact*: a subject (the person) and its new state. Everyone who
learns of the change deposits a statement of the new state (``Laertes, as of
round 7: Laertes is in the chapel.``): its witnesses, and whoever hears a speaker
retell a state it holds.

`FactBook` keeps, per statement text, the subject and state the world gave
it: what `fact_judge.FactJudge` reads to answer ``Supersedes(id)`` for the
older state of the same subject. The store's per-owner validity then
retires the old state for those who learned the new one only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .accounts import in_sentence
from .world import Event

__all__ = ["State", "changes", "statement", "FactBook"]


@dataclass(frozen=True)
class State:
    """A subject's state after an event: ``at`` a place, ``left`` a place, or ``dead``."""

    subject: str
    kind: str
    place: str
    when: str

    @property
    def at(self) -> str | None:
        """The place the subject can be met at (``None``: left or dead)."""
        return self.place if self.kind == "at" else None


def changes(event: Event) -> list[State]:
    """The state facts ``event`` changes, in the world's own terms (none for a say)."""
    when = event.when or f"round {event.round}"
    if event.kind == "enter":
        return [State(a, "at", event.place, when) for a in event.actors]
    if event.kind == "exit":
        return [State(a, "left", event.place, when) for a in event.actors]
    if event.kind == "act":
        return [State(d, "dead", event.place, when) for d in event.dies]
    return []


def statement(state: State) -> str:
    """The statement of a new state (``Laertes, as of round 7: Laertes is in the chapel.``).

    Its time makes a later return to a place another record; the subject
    leads it, so a deposit's nearest candidates hold the subject's older states.
    """
    where = in_sentence(state.place)
    what = {"at": f"is in {where}", "left": f"has left {where}"}.get(state.kind, "is dead")
    return f"{state.subject}, as of {state.when}: {state.subject} {what}."


@dataclass
class FactBook:
    """Every state statement the world produced: its text -> its `State`.

    ``learned`` counts statements deposited (``told`` of them heard from a
    speaker, the rest witnessed), ``linked`` those the judge
    linked after an older state, ``unlinked`` those that found no older
    state of their subject among the store's candidates.
    """

    states: dict[str, State] = field(default_factory=dict)
    learned: int = 0
    told: int = 0
    linked: int = 0
    unlinked: int = 0
    _ids: dict[str, int] = field(default_factory=dict)

    def note(self, state: State) -> str:
        """The statement of ``state``, now known to the book."""
        text = statement(state)
        self.states[text] = state
        self._ids.setdefault(text, len(self._ids))
        return text

    def number(self, text: str) -> int:
        """The order in which the book first met ``text`` (a stable id for the ledger)."""
        return self._ids[text]

    def state_of(self, text: str) -> State | None:
        """The state a statement text reports (``None``: not a state statement)."""
        return self.states.get(text)

    def learners(self, events: Iterable[Event], retold: Sequence[tuple[Event, str]] = ()) -> dict[str, list[str]]:
        """Who learns which state statements from ``events``: each change's
        witnesses; and the listeners of each ``(say event, state text)`` in
        ``retold`` (a speaker retold a state it holds)."""
        out: dict[str, list[str]] = {}
        for ev in events:
            for st in changes(ev):
                text = self.note(st)
                for w in dict.fromkeys(ev.witnesses + ev.actors):
                    if w != st.subject or st.kind != "dead":  # the dead learn nothing
                        out.setdefault(w, []).append(text)
        for ev, text in retold:
            for w in ev.witnesses:
                if w not in ev.actors and text not in out.get(w, []):
                    out.setdefault(w, []).append(text)
                    self.told += 1
        return out
