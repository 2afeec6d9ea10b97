"""Per-agent short-term memory: a goal stack, a status register and a cache of
recent action-result pairs with fifo, relevance or hybrid eviction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "CACHE_POLICIES",
    "GoalStack",
    "StatusRegister",
    "CacheEntry",
    "ActionCache",
    "Recalled",
    "Question",
    "ShortTermMemory",
    "GOAL_FIND",
]

#: A goal to find someone: ``"find Laertes"``.
GOAL_FIND = "find "

CACHE_POLICIES = ("fifo", "relevance", "hybrid")
#: How many rounds an agent remembers who was with it.
WITH_ROUNDS = 12
#: How many rounds recalled rows, sightings and open questions stay in short-term memory.
HOLD_ROUNDS = 6


class GoalStack:
    """Goals, most urgent on top; a goal done is popped, uncovering the last."""

    def __init__(self) -> None:
        self._goals: list[str] = []

    def push(self, goal: str) -> None:
        """Puts ``goal`` on top."""
        self._goals.append(goal)

    def pop(self) -> str | None:
        """Removes and returns the top goal (``None`` when empty)."""
        return self._goals.pop() if self._goals else None

    def peek(self) -> str | None:
        """The top goal (``None`` when empty)."""
        return self._goals[-1] if self._goals else None

    def __len__(self) -> int:
        return len(self._goals)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(reversed(self._goals))


class StatusRegister(dict):  # type: ignore[type-arg]
    """Named facts about the agent's present state (place, alive, last heard)."""

    def set(self, key: str, value: Any) -> None:
        """Sets one status field."""
        self[key] = value


@dataclass
class CacheEntry:
    """One action and what came of it, with the round and its embedding."""

    action: str
    result: str
    round: int
    seq: int
    vector: npt.NDArray[np.float32] | None = None

    @property
    def text(self) -> str:
        """The entry as one line: ``action -> result``."""
        return f"{self.action} -> {self.result}" if self.result else self.action


class ActionCache:
    """A bounded cache of action-result pairs.

    Eviction when full: ``fifo`` drops the oldest; ``relevance`` drops the
    entry least similar to the current focus (a goal or what was just heard);
    ``hybrid`` drops the lowest ``weight * recency + (1 - weight) * relevance``,
    both scaled to [0, 1], so an old but pertinent pair can outlive a fresh
    irrelevant one.
    """

    def __init__(self, capacity: int = 8, policy: str = "hybrid", weight: float = 0.5) -> None:
        if policy not in CACHE_POLICIES:
            raise ValueError(f"policy must be one of {CACHE_POLICIES}, got {policy!r}")
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self.policy = policy
        self.weight = weight
        self.entries: list[CacheEntry] = []
        self._seq = 0

    def _scores(self, focus: npt.NDArray[np.float32] | None) -> npt.NDArray[np.float64]:
        """Keep-worthiness of each entry under the policy: higher is kept."""
        n = len(self.entries)
        recency = np.array([e.seq for e in self.entries], dtype=np.float64)
        recency = (recency - recency.min()) / max(recency.max() - recency.min(), 1e-12) if n > 1 else np.ones(n)
        if self.policy == "fifo" or focus is None:
            return recency
        rel = np.array(
            [float(np.dot(e.vector, focus)) if e.vector is not None else 0.0 for e in self.entries],
            dtype=np.float64,
        )
        if self.policy == "relevance":
            return rel + 1e-9 * recency  # ties go to the newer entry
        span = rel.max() - rel.min()
        rel = (rel - rel.min()) / span if span > 1e-12 else np.zeros(n)
        return self.weight * recency + (1 - self.weight) * rel

    def add(self, entry: CacheEntry, focus: npt.NDArray[np.float32] | None = None) -> CacheEntry | None:
        """Insert ``entry``; returns the evicted entry when the cache was full."""
        entry.seq = self._seq
        self._seq += 1
        self.entries.append(entry)
        if len(self.entries) <= self.capacity:
            return None
        victim = int(np.argmin(self._scores(focus)))
        return self.entries.pop(victim)

    def ranked(self, focus: npt.NDArray[np.float32] | None = None) -> list[CacheEntry]:
        """Entries, most worth keeping first."""
        if not self.entries:
            return []
        order = np.argsort(-self._scores(focus), kind="stable")
        return [self.entries[i] for i in order]

    def __len__(self) -> int:
        return len(self.entries)


@dataclass(frozen=True)
class Recalled:
    """A row long-term memory returned, held in short-term memory for a few rounds.

    ``made``: the round the row was made in (its recency, read from the
    store, not from its text); ``held``: the round it was recalled in."""

    text: str
    made: int
    held: int
    via: str = "hit"
    id: int = -1  # the row's id in the backend (for provenance)


@dataclass(frozen=True)
class Question:
    """A question someone asked the agent: who asked, about whom, in which round."""

    asker: str
    subject: str
    round: int


@dataclass
class ShortTermMemory:
    """An agent's working state between rounds.

    Long-term memory is reached through it: what a recall returns is held
    here (``recalled``) for ``HOLD_ROUNDS`` rounds, and a decision recalls
    only when what is held lacks what the decision needs (the policy says
    what, see ``MemoryPolicy.recall_need``). What the agent perceives without
    acting (who it saw where, what was said to it) stays here and is never
    deposited: only the results of its own actions are.
    """

    goals: GoalStack = field(default_factory=GoalStack)
    status: StatusRegister = field(default_factory=StatusRegister)
    cache: ActionCache = field(default_factory=ActionCache)
    heard: list[str] = field(default_factory=list)  # what reached it last round
    # Who witnessed with it what it witnessed, per recent round (the last ``WITH_ROUNDS``).
    seen_with: dict[int, set[str]] = field(default_factory=dict)
    recalled: list[Recalled] = field(default_factory=list)
    # person -> (place, round): where it last saw or read of someone.
    whereabouts: dict[str, tuple[str, int]] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)  # asked of it, not yet answered
    # What its reading actions (read_thread, observe) last returned: (round, core of each item).
    learned: list[tuple[int, str]] = field(default_factory=list)
    associates: list[str] = field(default_factory=list)  # whom it seeks, in turn (its goals' people)

    def saw_with(self, round: int, people: set[str]) -> None:
        """Remembers who else witnessed what it witnessed in ``round`` (recent rounds only)."""
        self.seen_with.setdefault(round, set()).update(people)
        for old in [r for r in self.seen_with if r <= round - WITH_ROUNDS]:
            del self.seen_with[old]

    def hold(self, rows: list[Recalled], round: int) -> None:
        """Holds freshly recalled rows (newest first), dropping what is older than ``HOLD_ROUNDS``."""
        fresh = {r.text for r in rows}
        kept = [r for r in self.recalled if r.held > round - HOLD_ROUNDS and r.text not in fresh]
        self.recalled = (list(rows) + kept)[:16]

    def forget_stale(self, round: int) -> None:
        """Drops open questions and readings older than ``HOLD_ROUNDS``."""
        self.questions = [q for q in self.questions if q.round > round - HOLD_ROUNDS]
        self.learned = [x for x in self.learned if x[0] > round - HOLD_ROUNDS]
        self.recalled = [r for r in self.recalled if r.held > round - HOLD_ROUNDS]

    def focus_text(self) -> str:
        """What the agent has in mind: the last thing heard, else its goal."""
        if self.heard:
            return self.heard[-1]
        return self.goals.peek() or str(self.status.get("place") or "")
