"""The simulation's default equivalence judge: offline, and it reads text only.

It decides from the new statement, its depositor and the candidates' text
and similarity scores, as ``agentsensus`` hands them in a ``JudgeRequest``;
it never sees an event id or any other provenance (the simulation keeps
that outside the store). Each text is read back into its time phrase, if it
has one, and its core (`wording`): who reported it to whom is the
frame, what was reported (quoted or in indirect speech) is the core.

Two statements are one fact when

- they happened at the same time, or one of them does not say when (the
  time is a signal only when both texts have one);
- neither names someone the other lacks... unless one names fewer: the
  names of one core are a subset of the other's;
- neither holds a word whose opposite the other holds (enter / exit,
  come / go, live / die, ...);
- both or neither are a stance of the speaker's own (a suspicion, a
  reaction, an intention, an answer or a question of the simulation's
  grammar, `composed`): "I suspect Marcellus, for Horatio
  entered the hall" holds the words of the entrance and is not it;
- for accounts of a say, the same person spoke: the speaker is read from
  each frame relative to who reports it (`speakers`: "I told
  Horatio" deposited by Hamlet, "Hamlet told me", "I heard Hamlet say" were
  all said by Hamlet); a candidate's reporter is one of its owners, so a
  first-person candidate may have been said by any of them;
- their cores share enough content words: at least two, and, weighting each
  word by its rarity among the statements the judge has read (idf), at
  least ``threshold`` of the smaller side (overlap) and at least
  ``min_jaccard`` of the union. Identical cores always qualify.

With ``use_scores`` (the runner turns it on when the store's embedder is a
sentence model such as MiniLM), a candidate whose cosine score reaches
``score_threshold`` also qualifies with one shared content word: paraphrases
that share few words still meet. With the hashing embedder the scores say
little beyond the words, so the default is lexical alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Sequence

from .speakers import speakers
from .utterances import composed
from .wording import read
from .words import content_words

__all__ = ["AccountJudge", "account_judge", "ContentJudge", "content_judge"]

#: Words that make two otherwise alike reports different facts (stems, both ways).
OPPOSED = {
    ("enter", "exit"),
    ("come", "go"),
    ("live", "die"),
    ("give", "take"),
    ("open", "close"),
    ("yes", "no"),
    ("win", "lose"),
    ("love", "hate"),
    ("arrive", "leave"),
    ("up", "down"),
}
_OPPOSITE: dict[str, set[str]] = {}
for _a, _b in OPPOSED:
    _OPPOSITE.setdefault(_a, set()).add(_b)
    _OPPOSITE.setdefault(_b, set()).add(_a)


@lru_cache(maxsize=1 << 16)
def _key(text: str) -> tuple[tuple[str, int] | None, frozenset[str], frozenset[str], str, bool]:
    """(time, content words, names, flat core, whether the core was quoted) of ``text``."""
    r = read(text)
    lowered = frozenset(n.casefold() for n in r.names)
    words = frozenset(w for w in content_words(r.core, frame=False) if w not in lowered)
    flat = " ".join(re.findall(r"\w+", r.core.casefold()))
    return r.time, words, r.names, flat, r.quoted


class AccountJudge:
    """``judge(requests) -> list[int | None]``: see the module docstring.

    Ties go to the candidate with the higher similarity score, then the
    lower id. ``calls`` counts calls, ``requests`` statements judged.
    """

    def __init__(
        self,
        threshold: float = 0.7,
        min_jaccard: float = 0.4,
        *,
        use_scores: bool = False,
        score_threshold: float = 0.9,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if not 0.0 <= min_jaccard <= 1.0:
            raise ValueError(f"min_jaccard must be in [0, 1], got {min_jaccard}")
        self.threshold, self.min_jaccard = threshold, min_jaccard
        self.use_scores, self.score_threshold = use_scores, score_threshold
        self.calls = 0
        self.requests = 0
        self._df: Counter[str] = Counter()  # statements read that hold each word
        self._docs = 0

    def _weight(self, words: frozenset[str]) -> float:
        n = self._docs + 1
        # Summed in sorted order: a set's order changes with the process's hash seed, and
        # float sums in another order differ in the last bit, which can flip a threshold.
        return sum(math.log((n + 1) / (self._df[w] + 1)) + 1.0 for w in sorted(words))

    def read(self, statement: str) -> None:
        """Counts the words of a statement for the idf weights (each request does this)."""
        self._docs += 1
        self._df.update(_key(statement)[1])

    @property
    def name(self) -> str:
        """How the report names this judge."""
        return "lexical+scores" if self.use_scores else "lexical"

    def choose(self, statement: str, candidates: Sequence[Any], owner: str | None = None) -> int | None:
        """The id of the candidate that states the same fact, or ``None``.

        ``owner`` (who deposits it) tells whose "I" a first-person frame is;
        a candidate's owners (when the store shows them) tell whose its is.
        """
        time, mine, names, flat, _ = _key(statement)
        if not mine and not flat:
            return None
        said_by = speakers(statement, owner)
        stance = composed(statement)
        opposite = set().union(*(_OPPOSITE.get(w, ()) for w in mine)) if mine else set()
        w_mine = self._weight(mine)
        best: tuple[float, float, int] | None = None
        for c in candidates:
            c_time, theirs, c_names, c_flat, _ = _key(c.text)
            # A time is a signal only when both texts say one: accounts without time stamps still meet.
            if (time is not None and c_time is not None and c_time != time) or opposite & theirs:
                continue
            if not (names <= c_names or c_names <= names) or composed(c.text) != stance:
                continue
            if said_by is not None:  # the same words from another speaker are another fact
                owners = getattr(c, "owners", None)
                theirs_by = speakers(c.text, frozenset(owners) if owners else None)
                if theirs_by is not None and not said_by & theirs_by:
                    continue
            score = float(c.score) if getattr(c, "score", None) is not None else 0.0
            shared = mine & theirs
            if flat == c_flat:
                sim = 3.0
            elif len(shared) >= 2:
                ws = self._weight(shared)
                small = min(w_mine, self._weight(theirs))
                union = self._weight(mine | theirs)
                if ws < self.threshold * small or ws < self.min_jaccard * union:
                    continue
                sim = ws / small + ws / union
            elif self.use_scores and shared and score >= self.score_threshold:
                sim = score
            else:
                continue
            key = (sim, score, -int(c.id))
            if best is None or key > best:
                best = key
        return None if best is None else -best[2]

    def __call__(self, requests: Sequence[Any]) -> list[int | None]:
        self.calls += 1
        self.requests += len(requests)
        for r in requests:
            self.read(r.statement)
        return [self.choose(r.statement, r.candidates, getattr(r, "owner", None)) for r in requests]

    def __repr__(self) -> str:
        return f"AccountJudge(threshold={self.threshold}, min_jaccard={self.min_jaccard}, use_scores={self.use_scores})"


#: The default judge instance (lexical).
account_judge = AccountJudge()

# The names of the previous release of this module, kept for callers.
ContentJudge = AccountJudge
content_judge = account_judge
