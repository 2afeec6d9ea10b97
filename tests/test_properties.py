"""Hypothesis: in random worlds, with a judge that knows the truth, the store
keeps one record per event, owner sets equal witness sets, and recall never
shows a record its caller does not own."""

from __future__ import annotations

import shutil
import tempfile

import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, EVENT, near, truth_judge, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

world = st.integers(2, 6).flatmap(
    lambda n_agents: st.tuples(
        st.just(n_agents),
        # per event: (round, witnesses as a non-empty subset of agents)
        st.lists(
            st.tuples(st.integers(0, 3), st.sets(st.integers(0, n_agents - 1), min_size=1)),
            min_size=1,
            max_size=12,
        ),
        st.booleans(),  # deposit each round with deposit_many
        st.sampled_from(["keep_shorter", "keep_names"]),
    )
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world)
def test_one_record_per_event_and_owner_sets_are_witness_sets(w):
    n_agents, events, batched, policy = w
    path = tempfile.mkdtemp()
    try:
        with Store(path, dim=DIM, judge=truth_judge, min_similarity=0.5, merge_policy=policy) as s:
            for rnd in range(4):
                items = []
                for a in range(n_agents):
                    mine = [e for e, (r, wit) in enumerate(events) if r == rnd and a in wit]
                    if not mine:
                        continue
                    texts = [f"agent{a} says event {e} happened" + " indeed" * (a % 3) for e in mine]
                    vecs = np.stack([near(unit(e), 100 * a + e) for e in mine])
                    items.append((f"agent{a}", texts, vecs))
                if batched:
                    s.deposit_many(items, round=rnd)
                else:
                    for it in items:
                        s.deposit(*it, round=rnd)

            st_ = s.stats()
            assert st_.records == len(events)
            by_event = {}
            for a in range(n_agents):
                for rid in s.owned(f"agent{a}"):
                    by_event.setdefault(int(EVENT.search(s.get(rid).text).group(1)), rid)
            assert len(by_event) == len(events)
            for e, (rnd, wit) in enumerate(events):
                m = s.get(by_event[e])
                assert m.owners == frozenset(f"agent{a}" for a in wit)
                assert m.round == rnd
            assert st_.shared == sum(1 for _, wit in events if len(wit) >= 2)
            assert st_.max_owners == max(len(wit) for _, wit in events)
            for a in range(n_agents):
                for e in range(len(events)):
                    for r in s.recall(f"agent{a}", unit(e), k=3):
                        assert f"agent{a}" in r.owners
    finally:
        shutil.rmtree(path, ignore_errors=True)
