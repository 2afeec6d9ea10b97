"""The default equivalence judge of the simulation: deterministic, over text.

It compares the content words of the new statement with each candidate's text
(Jaccard similarity) and names the best candidate at or above a threshold.
Reported speech is compared by what was said: when both texts quote someone,
only the quotations are compared, so "I told Horatio: ..." and "Hamlet told
me: ..." meet, while a quoted line never merges with a plain report. Plain
reports must also agree on who is named: one may name fewer people than the
other, never different ones ("I saw the Ghost enter" is not "I entered with
Francisco", however alike the rest). It never
sees the world's event ids: an oracle would make the comparison between memory
designs meaningless.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from .words import content_words, jaccard

_QUOTE = re.compile(r'"(.+)"', re.DOTALL)


_NAME = re.compile(r"(?<=\s)[A-Z][\w']*")


def _content(text: str) -> tuple[bool, frozenset[str], frozenset[str], str]:
    """(is reported speech, the content words that decide, the names mentioned,
    the normalised quotation or text)."""
    m = _QUOTE.search(text)
    if m:
        quote = m.group(1)
        return True, content_words(quote, frame=False), frozenset(), " ".join(re.findall(r"\w+", quote.casefold()))
    names = frozenset(n for n in _NAME.findall(text) if n != "I")
    return False, content_words(text), names, " ".join(re.findall(r"\w+", text.casefold()))


def _compatible(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two plain reports can be one fact only if one names no one the other lacks."""
    return a <= b or b <= a

__all__ = ["ContentJudge", "content_judge"]


class ContentJudge:
    """``judge(requests) -> list[int | None]`` by content-word overlap.

    A request needs ``.statement`` and ``.candidates`` (objects with ``.id``,
    ``.text`` and ``.score``), as ``agentsensus`` hands them. Ties go to the
    candidate with the higher similarity score, then the lower id.
    """

    def __init__(self, threshold: float = 0.6) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.calls = 0

    def choose(self, statement: str, candidates: Sequence[Any]) -> int | None:
        """The id of the candidate that states the same content, or ``None``."""
        quoted, mine, names, flat = _content(statement)
        if not mine:
            return None
        best: tuple[float, float, int] | None = None
        for c in candidates:
            c_quoted, theirs, c_names, c_flat = _content(c.text)
            if c_quoted != quoted or not _compatible(names, c_names):
                continue
            if min(len(mine), len(theirs)) < 2 and flat != c_flat:
                continue  # one content word is too little to call two texts one fact
            sim = jaccard(mine, theirs)
            if sim < self.threshold:
                continue
            key = (sim, float(c.score if c.score is not None else 0.0), -int(c.id))
            if best is None or key > best:
                best = key
        return None if best is None else -best[2]

    def __call__(self, requests: Sequence[Any]) -> list[int | None]:
        self.calls += 1
        return [self.choose(r.statement, r.candidates) for r in requests]

    def __repr__(self) -> str:
        return f"ContentJudge(threshold={self.threshold})"


#: The default judge instance.
content_judge = ContentJudge()
