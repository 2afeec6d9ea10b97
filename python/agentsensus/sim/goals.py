"""Whom each agent seeks after the source: the people it had most to do with.

An agent's goals after round 0 are ``find <person>`` goals, one person at a
time, in the order of how often the two spoke to each other in the source
(either way; ties by name), living people only, at most ``MAX_SOUGHT``. So a
goal comes from the story, not from the memory design; what the agent then
learns of where that person is comes from its memory.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from .world import Event, World

__all__ = ["seek_lists", "MAX_SOUGHT"]

#: How many people an agent seeks in turn.
MAX_SOUGHT = 3


def seek_lists(world: World, events: Iterable[Event]) -> dict[str, list[str]]:
    """For each living agent, the living people it spoke with most in ``events``."""
    talk: dict[str, Counter[str]] = {}
    for ev in events:
        if ev.kind != "say":
            continue
        heard = [w for w in ev.witnesses if w not in ev.actors]
        for s in ev.actors:
            for h in heard:
                talk.setdefault(s, Counter())[h] += 1
                talk.setdefault(h, Counter())[s] += 1
    alive = {n for n, a in world.agents.items() if a.alive}
    out: dict[str, list[str]] = {}
    for agent in world.agents:
        if agent not in alive:
            continue
        ranked = sorted(((-c, p) for p, c in talk.get(agent, Counter()).items() if p in alive and p != agent))
        out[agent] = [p for _, p in ranked[:MAX_SOUGHT]]
    return out
