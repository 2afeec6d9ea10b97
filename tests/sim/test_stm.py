"""Short-term memory: goal stack, status register, the three cache policies."""

from __future__ import annotations

import numpy as np
import pytest
from agentsensus.sim.stm import ActionCache, CacheEntry, GoalStack, ShortTermMemory, StatusRegister
from hypothesis import given
from hypothesis import strategies as st


def unit(i: int, dim: int = 4) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i % dim] = 1.0
    return v


def entry(name: str, axis: int) -> CacheEntry:
    return CacheEntry(name, "ok", 1, 0, unit(axis))


def test_goal_stack_is_lifo() -> None:
    g = GoalStack()
    assert g.peek() is None and g.pop() is None
    g.push("find the ghost")
    g.push("swear Horatio")
    assert g.peek() == "swear Horatio" and list(g) == ["swear Horatio", "find the ghost"]
    assert g.pop() == "swear Horatio" and len(g) == 1


def test_status_register_and_focus() -> None:
    stm = ShortTermMemory()
    stm.status.set("place", "the platform")
    assert isinstance(stm.status, StatusRegister) and stm.focus_text() == "the platform"
    stm.goals.push("revenge")
    assert stm.focus_text() == "revenge"
    stm.heard.append("Who's there?")
    assert stm.focus_text() == "Who's there?"


def test_fifo_evicts_the_oldest() -> None:
    c = ActionCache(2, "fifo")
    c.add(entry("a", 0))
    c.add(entry("b", 1))
    evicted = c.add(entry("c", 2), focus=unit(0))
    assert evicted is not None and evicted.action == "a"
    assert [e.action for e in c.ranked()] == ["c", "b"]


def test_relevance_evicts_the_least_relevant() -> None:
    c = ActionCache(2, "relevance")
    c.add(entry("a", 0))
    c.add(entry("b", 1))
    evicted = c.add(entry("c", 2), focus=unit(0))  # "a" is on topic, though oldest
    assert evicted is not None and evicted.action == "b"
    assert [e.action for e in c.ranked(unit(0))][0] == "a"


def test_hybrid_weighs_recency_against_relevance() -> None:
    recent = ActionCache(2, "hybrid", weight=0.9)
    relevant = ActionCache(2, "hybrid", weight=0.1)
    for c in (recent, relevant):
        c.add(entry("old-on-topic", 0))
        c.add(entry("mid-off-topic", 1))
    assert recent.add(entry("new-off-topic", 2), focus=unit(0)).action == "old-on-topic"  # type: ignore[union-attr]
    assert relevant.add(entry("new-off-topic", 2), focus=unit(0)).action == "mid-off-topic"  # type: ignore[union-attr]


def test_bad_policy_and_capacity() -> None:
    with pytest.raises(ValueError):
        ActionCache(2, "lru")
    with pytest.raises(ValueError):
        ActionCache(0)


@pytest.mark.slow
@given(st.sampled_from(["fifo", "relevance", "hybrid"]), st.integers(1, 6), st.lists(st.integers(0, 3), max_size=30))
def test_cache_never_overflows(policy: str, capacity: int, axes: list[int]) -> None:
    c = ActionCache(capacity, policy)
    for n, axis in enumerate(axes):
        c.add(entry(str(n), axis), focus=unit(0))
        assert len(c) == min(n + 1, capacity)
    if policy == "fifo" and axes:
        assert sorted(int(e.action) for e in c.entries) == list(range(len(axes)))[-capacity:]
