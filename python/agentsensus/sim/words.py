"""Content words of a statement: what the content judge and the default
importance / reflection / insight functions compare.

Function words, pronouns and the framing words the accounts and the
sediment use ("told", "saw", "heard", "lives in this world") are dropped, so two perspectives on one event reduce to the
same content; a crude suffix stemmer makes "entered" meet "enter".
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Iterable

__all__ = ["STOPWORDS", "FRAME_WORDS", "stem", "content_words", "jaccard", "top_words"]

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")

STOPWORDS = frozenset(
    """
    a an the and or but nor so yet if then than that this these those there here
    of to in on at by for with from into upon unto out up down off over under as
    is am are was were be been being do does did done doth dost hath has have had
    shall shalt will wilt would should could can may might must
    i me my mine myself we us our ours ourselves you your yours yourself ye
    thou thee thy thine thyself he him his himself she her hers herself it its
    itself they them their theirs themselves who whom whose which what when where
    why how all any both each few more most other some such no not only own same
    too very just now o oh ay nay yes let lets 'tis 'twas tis twas is't
    told tell tells say says said saw see seen heard hear what did done
    one ones thing things
    """.split()
)

#: Words of the simulation's own report frames ("There is a place called ...",
#: "... lives in this world."): noise outside quotations, content inside them.
FRAME_WORDS = frozenset("place called live lives world".split())


def stem(word: str) -> str:
    """Strip a common English suffix (crude, deterministic, good enough)."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_words(text: str, *, frame: bool = True) -> frozenset[str]:
    """The stemmed content words of ``text`` (NFKC, casefolded).

    ``frame=False`` keeps the frame words (for quoted speech).
    """
    norm = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    drop = STOPWORDS | FRAME_WORDS if frame else STOPWORDS
    return frozenset(stem(w.strip("'")) for w in _WORD.findall(norm) if w not in drop and len(w) > 1)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; 0.0 when both are empty."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def top_words(texts: Iterable[str], n: int = 3) -> list[str]:
    """The ``n`` most frequent content words over ``texts`` (ties: alphabetical)."""
    counts: Counter[str] = Counter()
    for t in texts:
        counts.update(content_words(t))
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
