"""What agents say after the source: a small grammar of new statements.

No model is needed: every utterance is composed from the speaker's goal, its
place, who is there and what its short-term memory holds (what recall
returned, what it read or observed, what it was asked). The forms:

- ``intention``: ``I will go to the chapel to find Laertes.``
- ``question``: ``Have you seen Laertes?`` / ``Where is Laertes?``, to
  someone present (the say's addressee; the account's frame names it);
- ``answer``: to a question asked of the speaker, from what it holds:
  ``I heard that Laertes was in the chapel.`` (a sighting or a recalled row
  naming the person and a place), ``Of Laertes I know that Laertes said ...``
  (a recalled row naming the person), or ``I know nothing of Laertes.``
- ``inference``: two held rows that name one third person, joined:
  ``I suspect Polonius, for Polonius hid behind the arras, and the king called for light.``
- ``reaction``: to something the speaker read or observed:
  ``It troubles me that the queen drank the cup.`` (grave words such as
  death, poison or blood give ``I fear that ...``).
- ``retelling``: a held row's core, with who said it (`retell`); the
  report counts the share of says that are retellings.

Each composed statement is one clause with no inner sentence or clause
end, so an account of it stays one statement. Every function here is pure: the policy picks the form and its parts with
its seeded random stream.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .accounts import in_sentence
from .wording import TIME, read

__all__ = [
    "FORMS",
    "composed",
    "retell",
    "core_of",
    "intention",
    "question",
    "answer",
    "inference",
    "reaction",
]

#: Every form a say may take (``Action.form``).
FORMS = ("retelling", "intention", "question", "answer", "inference", "reaction")

_FIRST_PERSON = {"I": "{me}", "me": "{me}", "my": "{me}'s", "myself": "{me}", "Me": "{me}", "My": "{me}'s"}
_PERSON = re.compile(r"\b(I|me|my|myself|Me|My)\b")
_QUOTED = re.compile(r'"[^"]*"')
# Who a frame says spoke: "Hamlet told me", "I heard Hamlet say", "Hamlet and I said to ourselves".
_SPEAKER = re.compile(r"(?:I heard |I watched )?(.+?)\s+(?:told|said|say|tell)\b")
_GRAVE = re.compile(
    r"\b(dead|death|dies|died|die|kill\w*|slain|murder\w*|poison\w*|venom|blood\w*|drown\w*|stab\w*)\b", re.I
)
_LEADS = ("The", "A", "An", "This", "It", "Someone")
_CLAUSE = re.compile(r"[.!?;:]")
# What a composed statement opens with, wherever it stands in a report ("Hamlet said I suspect ...").
_COMPOSED = re.compile(
    r"\b(It troubles me that|I fear that|I suspect|I will go to|I heard that|I know nothing of|Of \w[\w ]* I know that"
    r"|Where is|Have you seen)\b",
    re.I,
)


def _speaker(memory: str, me: str) -> str:
    """Who a quoted memory says spoke ("I" in it is ``me``)."""
    q = _QUOTED.search(memory)
    inner = TIME.sub("", q.group(0).strip('"')).strip(" ,") if q else ""
    # A retold report names its first speaker inside the quotation: that one said it.
    frame = (
        inner.split(": ", 1)[0] if ": " in inner.rstrip(": ") else TIME.sub("", _QUOTED.sub(" ", memory)).strip(" ,.:")
    )
    m = _SPEAKER.match(frame)
    return _PERSON.sub(me, m.group(1)) if m else "someone"


@lru_cache(maxsize=1 << 17)
def retell(memory: str, me: str) -> str:
    """What ``me`` says to retell ``memory``: its core, with its time if it
    names one and, for something said, who it thinks said it ("I" in its
    memory is itself)."""
    r = read(memory)
    core = r.core.strip()
    if r.quoted:
        core = f"{_speaker(memory, me)} said: {core}"
    else:
        core = _PERSON.sub(lambda m: _FIRST_PERSON[m.group(1)].format(me=me), core)
    if r.time:
        first = core.split(" ", 1)[0]
        lead = core[:1].lower() + core[1:] if first in _LEADS else core
        core = f"In {r.time[0]} {r.time[1]}, {lead}"
    core = core[:1].upper() + core[1:]
    return core if core.endswith((".", "!", "?")) else core + "."


@lru_cache(maxsize=1 << 17)
def core_of(memory: str, me: str) -> str:
    """A held row as one clause to put inside a sentence: its first clause,
    with who said it, without its time or any inner punctuation (an account
    splits a say at clause ends, so a composed statement must stay one)."""
    r = read(memory)
    core = _CLAUSE.split(TIME.sub("", r.core).strip(" ,"), maxsplit=1)[0].strip(" ,'\"-")
    if r.quoted:
        core = f"{_speaker(memory, me)} said {core[:1].lower() + core[1:] if core[:2] != 'I ' else core}"
    else:
        core = _PERSON.sub(lambda m: _FIRST_PERSON[m.group(1)].format(me=me), core)
    first = core.split(" ", 1)[0]
    return core[:1].lower() + core[1:] if first in _LEADS else core


def composed(memory: str) -> bool:
    """True when ``memory`` reports one of these statements rather than something seen or
    said in the play: a reaction or an inference never builds on another (no chains of
    "it troubles me that X said it troubles me that ...")."""
    return bool(_COMPOSED.search(read(memory).core))


def intention(place: str, person: str) -> str:
    """``I will go to <place> to find <person>.``"""
    return f"I will go to {in_sentence(place)} to find {person}."


def question(person: str, where: bool) -> str:
    """``Where is <person>?`` or ``Have you seen <person>?`` (whom it asks is the say's addressee)."""
    return f"Where is {person}?" if where else f"Have you seen {person}?"


def answer(subject: str, place: str | None, memory: str | None, me: str) -> str:
    """An answer to a question about ``subject`` (the asker is the say's addressee): where
    it was (a place), else what a held row says of it, else that nothing is known."""
    if place is not None:
        return f"I heard that {subject} was in {in_sentence(place)}."
    if memory is not None:
        return f"Of {subject} I know that {core_of(memory, me)}."
    return f"I know nothing of {subject}."


def inference(person: str, first: str, second: str, me: str) -> str:
    """Two held rows naming ``person``, joined into a suspicion."""
    a, b = core_of(first, me), core_of(second, me)
    return f"I suspect {person}, for {a}, and {b}."


def reaction(memory: str, me: str) -> str:
    """A reaction to something read or observed: fear at grave news, else unease."""
    core = core_of(memory, me)
    lead = "I fear that" if _GRAVE.search(memory) else "It troubles me that"
    return f"{lead} {core}."
