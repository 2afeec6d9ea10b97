"""Each witness's own account of an event, split into statements.

A speaker, a listener and an overhearer word the same speech differently
("I told Horatio: ..." / "Hamlet told us: ..." / "I heard Hamlet tell
Horatio: ..."), as do a mover and those who see it move. These are the only
texts any memory backend receives, so merging them takes a judge that reads
content, not an event id.
"""

from __future__ import annotations

import re

from .world import Event

__all__ = ["split_statements", "in_sentence", "account", "names"]

_CLAUSE_END = re.compile(r"(?:(?<=[.!?;:])|(?<=[.!?;:]['\"]))\s+(?=\S)")
_WORD = re.compile(r"\w+")
MIN_WORDS = 4


def split_statements(text: str, min_words: int = MIN_WORDS) -> list[str]:
    """Split a speech at sentence and clause ends into statements.

    A clause shorter than ``min_words`` words joins the next one (the last
    joins the previous), so a statement carries enough content to be judged;
    fragments with no word at all are dropped.
    """
    out: list[str] = []
    current = ""
    for part in _CLAUSE_END.split(text.strip()):
        current = f"{current} {part}".strip() if current else part.strip()
        if len(_WORD.findall(current)) >= min_words:
            out.append(current)
            current = ""
    if current and _WORD.search(current):
        if out and len(_WORD.findall(current)) < min_words:
            out[-1] = f"{out[-1]} {current}"
        else:
            out.append(current)
    return out


def in_sentence(place: str) -> str:
    """``A room in the castle`` -> ``a room in the castle`` (mid-sentence)."""
    first, _, rest = place.partition(" ")
    if first in ("A", "An", "The", "Another") and rest:
        return first.lower() + " " + rest
    return place


def names(people: tuple[str, ...] | list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    people = list(people)
    if len(people) <= 1:
        return "".join(people)
    return ", ".join(people[:-1]) + " and " + people[-1]


def _say(event: Event, witness: str) -> list[str]:
    speakers = event.actors
    audience = event.targets or tuple(w for w in event.witnesses if w not in speakers)
    sentences = split_statements(event.text)
    if witness in speakers:
        co = [s for s in speakers if s != witness]
        who = (names(co) + " and I") if co else "I"
        if not audience:
            frame = f"{who} said to {'ourselves' if co else 'myself'}"
        elif len(audience) <= 2:
            frame = f"{who} told {names(audience)}"
        else:
            frame = f"{who} told them"  # naming a crowd would drown the content
    elif witness in audience or not event.targets:
        listeners = [w for w in event.witnesses if w not in speakers]
        frame = f"{names(speakers)} told {'us' if len(listeners) > 1 else 'me'}"
    else:
        frame = f"I heard {names(speakers)} tell {names(event.targets)}"
    return [f'{frame}: "{s}"' for s in sentences]


def _move(event: Event, witness: str) -> list[str]:
    verb = "entered" if event.kind == "enter" else "exited"
    if witness in event.actors:
        co = [a for a in event.actors if a != witness]
        return [f"I {verb} {in_sentence(event.place)}" + (f" with {names(co)}." if co else ".")]
    base = "enter" if event.kind == "enter" else "exit"
    return [f"I saw {names(event.actors)} {base} {in_sentence(event.place)}."]


def _act(event: Event, witness: str) -> list[str]:
    if not event.actors:
        return [f"I heard it: {event.text}"]
    if witness in event.actors:
        return [f"What I did: {event.text}"]
    if witness in event.targets:
        return [f"What was done to me: {event.text}"]
    return [f"What I saw: {event.text}"]


def account(event: Event, witness: str) -> list[str]:
    """The statements ``witness`` deposits about ``event``."""
    if event.kind == "say":
        return _say(event, witness)
    if event.kind in ("enter", "exit"):
        return _move(event, witness)
    return _act(event, witness)
