"""Who a text names: the cast members it mentions, as text alone can tell."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

__all__ = ["People", "people_of"]

_TITLES = frozenset(
    "king queen lord lady prince princess duke duchess earl sir first second third fourth old young saint "
    "master mistress doctor friar captain gentleman gentlewoman servant messenger player clown the of and "
    "bishop cardinal archbishop count countess marquess lieutenant".split()
)


class People:
    """Finds the cast members a text names: full names, or a word of a name
    that belongs to exactly one of them ("Polonius" for "Lord Polonius")."""

    def __init__(self, cast: Iterable[str]) -> None:
        cast = list(dict.fromkeys(cast))
        owners: dict[str, set[str]] = {}
        for name in cast:
            for tok in name.split():
                if len(tok) >= 3 and tok.lower() not in _TITLES:
                    owners.setdefault(tok, set()).add(name)
        self.spellings = {n: n for n in cast}
        self.spellings.update({t: next(iter(o)) for t, o in owners.items() if len(o) == 1})
        keys = sorted(self.spellings, key=len, reverse=True)
        self._re = re.compile(r"\b(" + "|".join(map(re.escape, keys)) + r")\b") if keys else None

    def __call__(self, text: str) -> frozenset[str]:
        if self._re is None:
            return frozenset()
        return frozenset(self.spellings[m.group(1)] for m in self._re.finditer(text))


@lru_cache(maxsize=64)
def people_of(cast: tuple[str, ...]) -> People:
    """One `People` per cast (policies ask every round)."""
    return People(cast)
