"""The word rule of ``judges.supersedes_when``: does a statement report a
change of what a candidate says?

It answers yes only when all of these hold (words are compared casefolded):

1. The statement holds a change marker (`CHANGE_MARKERS`, the first one in
   it). The words before it, less leading articles and trailing auxiliaries
   ("has", "was", ...), are its subject: "Alice" in "Alice has moved to
   Berlin", "meeting" in "The meeting was cancelled". No subject, or a
   pronoun in it ("I", "she", "it", ...: who it is depends on the reporter),
   and the answer is no.
2. The candidate begins with that subject (after its own leading articles),
   and the subject does not go on there ("Alice's brother", "Alice and Bob").
3. The candidate is about the same thing: it shares a word with the
   statement besides the subject and the marker, or holds one of the words
   of the state the marker replaces ("lives" for "moved to", "alive" for
   "died", "on"/"at" for a cancelled or rescheduled plan).
4. The candidate does not already say the change: for a marker followed by
   the new state ("moved to Berlin", "now lives in Berlin", "corrected to
   40"), it lacks one of the words after the marker; for a marker that is
   the new state ("died", "no longer", "cancelled"), it lacks the marker.

Two different people each moving fail (2); a restatement fails (4); another
fact about the same subject ("Alice likes coffee") fails (3). The rule reads
words, not meaning: it misses changes worded otherwise, and it can be fooled
by a candidate that begins like the subject and shares a word; a model judge
(``judges.llm(..., supersedes=True)``) reads meaning.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["CHANGE_MARKERS", "reports_change"]

_PLAN = frozenset({"on", "at", "scheduled", "planned", "set"})
_HOME = frozenset({"live", "lives", "lived", "living", "resides", "based", "stays", "moved"})
_ALIVE = frozenset({"alive", "living", "lives", "sick", "ill", "wounded", "recovering", "dying"})

#: marker -> (the new state follows the marker, words one of which an old state it replaces may hold)
CHANGE_MARKERS: dict[str, tuple[bool, frozenset[str]]] = {
    "moved to": (True, _HOME),
    "relocated to": (True, _HOME),
    "now": (True, frozenset()),
    "corrected to": (True, frozenset()),
    "changed to": (True, frozenset()),
    "rescheduled to": (True, _PLAN),
    "postponed to": (True, _PLAN),
    "no longer": (False, frozenset()),
    "died": (False, _ALIVE),
    "passed away": (False, _ALIVE),
    "cancelled": (False, _PLAN),
    "canceled": (False, _PLAN),
}

_WORD = re.compile(r"[^\W_]+")
_ARTICLES = frozenset({"the", "a", "an"})
_AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would", "got"})
# Function words: never the "same thing" two texts share.
_FUNCTION = _ARTICLES | _AUXILIARIES | frozenset({"s", "of", "in", "on", "at", "to", "and", "or", "for", "by"})
_PRONOUNS = frozenset(
    "i me my mine we us our you your he him his she her they them their it its this that these those there".split()
)
# A word right after a name that makes it part of a longer subject.
_SUBJECT_GOES_ON = frozenset({"s", "and", "or", "nor", "of", "with"})
_MARKER_WORDS = {m: m.split() for m in CHANGE_MARKERS}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _find(words: list[str], phrase: list[str]) -> int:
    """The position of ``phrase`` in ``words``, or -1."""
    n = len(phrase)
    return next((i for i in range(len(words) - n + 1) if words[i : i + n] == phrase), -1)


def _marker(words: list[str]) -> Optional[tuple[int, str]]:
    """The first change marker in ``words`` (the longest at that place) and its position."""
    found = [(i, -len(_MARKER_WORDS[m]), m) for m in CHANGE_MARKERS if (i := _find(words, _MARKER_WORDS[m])) >= 0]
    if not found:
        return None
    i, _, m = min(found)
    return i, m


def _strip_articles(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i] in _ARTICLES:
        i += 1
    return words[i:]


def reports_change(statement: str, candidate: str) -> bool:
    """Whether ``statement`` reports a newer state of what ``candidate`` says
    (the rule in the module docstring)."""
    sw = _words(statement)
    hit = _marker(sw)
    if hit is None:
        return False
    at, marker = hit
    marker_words = _MARKER_WORDS[marker]
    subject = _strip_articles(sw[:at])
    while subject and subject[-1] in _AUXILIARIES:
        subject.pop()
    if not subject or any(w in _PRONOUNS for w in subject):
        return False
    cw = _strip_articles(_words(candidate))
    n = len(subject)
    if cw[:n] != subject or (len(cw) > n and cw[n] in _SUBJECT_GOES_ON):
        return False
    follows, replaces = CHANGE_MARKERS[marker]
    theirs = set(cw[n:]) - _FUNCTION
    ours = set(sw) - _FUNCTION - set(subject) - set(marker_words)
    if not (theirs & ours) and not (set(cw) & replaces):
        return False
    if follows:
        new_state = set(sw[at + len(marker_words) :]) - _FUNCTION
        return bool(new_state) and not new_state <= set(cw)
    return _find(cw, marker_words) < 0
