"""Facts of the world's state that events change: where someone is, whether they live.

An entrance puts its movers in a place, an exit takes them out of it, a
death (an act whose ``dies`` names someone) ends a life. Each such change is
a *state fact*: a subject (the person) and its new state. Everyone who
learns of the change deposits a statement of the new state (``Laertes, as of
round 7: Laertes is in the chapel.``): its witnesses, and whoever hears a speaker
retell a state it holds.

`FactBook` keeps, per statement text, the subject and state the world gave
it. `FactJudge` wraps the simulation's judge: a statement of a new state
supersedes a candidate that states an older state of the same subject
(``Supersedes(id)``), known from the book (what the world's events said),
never from the words; every other statement goes to the wrapped judge with
the state records out of its candidates, so an account never merges into a
state. The store's per-owner validity then retires the old state for those
who learned the new one only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .accounts import in_sentence
from .world import Event

__all__ = ["State", "changes", "statement", "FactBook", "FactJudge", "superseded_for"]


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

    ``learned`` counts statements deposited, ``linked`` those the judge
    linked after an older state, ``unlinked`` those that found no older
    state of their subject among the store's candidates.
    """

    states: dict[str, State] = field(default_factory=dict)
    learned: int = 0
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
        return out


class FactJudge:
    """A judge that knows state facts from the `FactBook`, around ``inner`` for everything else."""

    def __init__(self, inner: Any, book: FactBook) -> None:
        self.inner, self.book = inner, book

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    def _supersedes(self, state: State, candidates: Sequence[Any]) -> Any:
        """``Supersedes`` of the newest candidate stating an older state of the same subject, or ``None``."""
        from agentsensus import Supersedes  # the engine's verdict type, imported with the store

        older = [c for c in candidates if (s := self.book.state_of(c.text)) is not None and s.subject == state.subject]
        if not older:
            self.book.unlinked += 1
            return None
        self.book.linked += 1
        return Supersedes(max(int(c.id) for c in older))

    def __call__(self, requests: Sequence[Any]) -> list[Any]:
        verdicts: list[Any] = [None] * len(requests)
        rest: list[int] = []
        for i, r in enumerate(requests):
            state = self.book.state_of(r.statement)
            if state is not None:
                verdicts[i] = self._supersedes(state, r.candidates)
            else:
                rest.append(i)
        if rest:
            asked = [
                dataclasses.replace(
                    requests[i],
                    candidates=[c for c in requests[i].candidates if self.book.state_of(c.text) is None],
                )
                for i in rest
            ]
            for i, v in zip(rest, self.inner(asked)):
                verdicts[i] = v
        return verdicts


def superseded_for(store: Any, rid: int, owner: str) -> bool:
    """Whether record ``rid`` is superseded for ``owner``: it holds a later record of its chain."""
    chain = [int(m.id) for m in store.chain(rid)]
    later = chain[chain.index(rid) + 1 :] if rid in chain else []
    return any(owner in store.get(x).owners for x in later)
