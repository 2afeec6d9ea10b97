"""Properties over random lineage graphs: the frontier is what a plain walk
of the recorded links finds, and a check is current exactly when every
frontier link's key is still at its recorded version (or same content)."""

from __future__ import annotations

import os
import tempfile

import pytest
from agentsensus import Store
from hypothesis import given, settings
from hypothesis import strategies as st

OWNERS = ["alice", "bob", "carol"]


@st.composite
def graphs(draw):
    n_base = draw(st.integers(1, 6))
    steps = []
    for i in range(n_base):
        steps.append(("publish", f"b{i}", draw(st.sampled_from(OWNERS)), draw(st.sampled_from(["x", "y"])), None))
    n_derived = draw(st.integers(1, 5))
    for j in range(n_derived):
        avail = [s[1] for s in steps]
        ins = draw(st.lists(st.sampled_from(avail), min_size=1, max_size=4, unique=True))
        steps.append(("derive", f"d{j}", "planner", f"d{j}", ins))
    updates = draw(st.lists(st.tuples(st.integers(0, n_base - 1), st.sampled_from(["x", "y"])), max_size=4))
    scope = draw(st.none() | st.lists(st.sampled_from([s[1] for s in steps]), max_size=3))
    return steps, updates, scope


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(graphs())
def test_frontier_and_check_match_a_reference_walk(g):
    steps, updates, scope = g
    with tempfile.TemporaryDirectory() as d, Store(os.path.join(d, "s"), dim=2) as s:
        f = s.fence
        links: dict[tuple[str, int], dict[str, int]] = {}
        content: dict[tuple[str, int], str] = {}
        owner: dict[str, str] = {}
        for kind, key, who, value, ins in steps:
            owner[key] = who
            if kind == "publish":
                v = f.publish(key, who, value)
            else:
                used = {k: f.head(k) for k in ins}
                v = f.derive(key, who, value, used)
                links[(key, v)] = used
            content[(key, v)] = value
        for i, value in updates:
            key = f"b{i}"
            content[(key, f.publish(key, owner[key], value))] = value
        plan = steps[-1][1]
        # reference walk
        want: set[tuple[str, int]] = set()
        sc = None if scope is None else set(scope)
        todo = [(plan, f.head(plan), sc is None or plan in sc)]
        seen = set()
        while todo:
            k, v, under = todo.pop()
            for ik, iv in links.get((k, v), {}).items():
                inside = under or (sc is not None and ik in sc)
                if inside:
                    want.add((ik, iv))
                if (ik, iv, inside) not in seen:
                    seen.add((ik, iv, inside))
                    todo.append((ik, iv, inside))
        got = f.frontier(plan, scope=scope)
        assert {(l.key, l.version) for l in got} == want
        assert all(l.owner == owner[l.key] for l in got)
        assert [l.owner for l in got] == sorted(l.owner for l in got)
        current = all(f.head(k) == v or content[(k, f.head(k))] == content[(k, v)] for k, v in want)
        c = f.check(plan, scope=scope)
        assert c.current == current
        assert c.owners_asked == len({owner[k] for k, _ in want})
        assert f.check(plan, scope=scope, heads=lambda o, ks: {k: f.head(k) for k in ks}).current == all(
            f.head(k) == v for k, v in want
        )
