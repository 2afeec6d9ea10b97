"""Per-agent short-term memory: a goal stack, a status register and a cache of
recent action-result pairs with fifo, relevance or hybrid eviction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["CACHE_POLICIES", "GoalStack", "StatusRegister", "CacheEntry", "ActionCache", "ShortTermMemory"]

CACHE_POLICIES = ("fifo", "relevance", "hybrid")
#: How many rounds an agent remembers who was with it.
WITH_ROUNDS = 12


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


@dataclass
class ShortTermMemory:
    """An agent's working state between rounds."""

    goals: GoalStack = field(default_factory=GoalStack)
    status: StatusRegister = field(default_factory=StatusRegister)
    cache: ActionCache = field(default_factory=ActionCache)
    heard: list[str] = field(default_factory=list)  # what reached it last round
    # Who witnessed with it what it witnessed, per recent round (the last ``WITH_ROUNDS``).
    seen_with: dict[int, set[str]] = field(default_factory=dict)

    def saw_with(self, round: int, people: set[str]) -> None:
        """Remembers who else witnessed what it witnessed in ``round`` (recent rounds only)."""
        self.seen_with.setdefault(round, set()).update(people)
        for old in [r for r in self.seen_with if r <= round - WITH_ROUNDS]:
            del self.seen_with[old]

    def focus_text(self) -> str:
        """What the agent has in mind: the last thing heard, else its goal."""
        if self.heard:
            return self.heard[-1]
        return self.goals.peek() or str(self.status.get("place") or "")
