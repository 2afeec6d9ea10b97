"""Sedimentation: a source text becomes owner-tagged memory items at round 0.

Each sentence of the source is one item, owned by the agents it names, or by
every agent when it names none (common knowledge). Each agent then deposits
its items as one deposit, so every backend starts from the same knowledge at
the same granularity.
"""

from __future__ import annotations

import re
from typing import Sequence

from .accounts import in_sentence, split_statements
from .play import Play

__all__ = ["sediment_items", "play_source"]


def play_source(play: Play) -> str:
    """The default source for a play world: its title, places and people.

    Nothing of the plot: an agent starts knowing who and where, not what.
    """
    # The title is left out: in Hamlet it would name an agent and make the
    # sentence his alone.
    lines = [f"This world is a play in {len(play.places)} places with {len(play.cast)} people."]
    lines += [f"There is a place called {in_sentence(place)}." for place in play.places]
    lines += [f"{agent} lives in this world." for agent in play.cast]
    return "\n".join(lines)


def sediment_items(source: str, agents: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(owner, statements) per agent, in ``agents`` order; agents with none are left out."""
    patterns = {a: re.compile(r"(?<!\w)" + re.escape(a) + r"(?!\w)") for a in agents}
    owned: dict[str, list[str]] = {a: [] for a in agents}
    for line in source.splitlines():
        for statement in split_statements(line):
            named = [a for a, p in patterns.items() if p.search(statement)]
            for a in named or agents:
                owned[a].append(statement)
    return [(a, owned[a]) for a in agents if owned[a]]
