"""The planner scores a batch's own new records with the engine's kernel.

A statement of deposit_many meets the records earlier items of the batch
created (staged, with negative provisional ids) and the records already
committed; both must be scored as the engine scores them, under every
metric, or the same pair of statements would merge in a batch and not in
two deposits (or the other way round).
"""

from __future__ import annotations

import os

import numpy as np
from agentsensus import Store
from helpers import DIM
from hypothesis import given, settings
from hypothesis import strategies as st

vectors = st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=DIM, max_size=DIM).filter(
    lambda v: float(np.dot(v, v)) > 1e-3
)


@settings(max_examples=25, deadline=None)
@given(metric=st.sampled_from(["cos", "ip", "l2sq"]), a=vectors, b=vectors)
def test_staged_scores_are_the_engines(tmp_path_factory, metric, a, b):
    va, vb = np.asarray(a, np.float32), np.asarray(b, np.float32)
    seen: dict[str, float] = {}

    def judge(name):
        def j(requests):
            for r in requests:
                for c in r.candidates:
                    seen[name] = c.score
            return [None] * len(requests)

        return j

    root = tmp_path_factory.mktemp("plan")
    # One batch: b meets a as a staged record.
    with Store(
        os.fspath(root / "batch"), dim=DIM, metric=metric, min_similarity=-1e9, sync=False, judge=judge("staged")
    ) as s:
        s.deposit_many([("x", ["first"], va[None]), ("y", ["second"], vb[None])])
    # Two deposits: b meets a committed, scored by the engine's prepare.
    with Store(
        os.fspath(root / "apart"), dim=DIM, metric=metric, min_similarity=-1e9, sync=False, judge=judge("committed")
    ) as s:
        s.deposit("x", ["first"], va[None])
        s.deposit("y", ["second"], vb[None])
        engine = s._handles().engine
        kept = engine.prepare_vectors(np.stack([va, vb]))
        exact = float(engine.similarities(kept[1:], kept[:1])[0, 0])

    assert seen["staged"] == exact  # the planner used the engine's kernel, bit for bit
    # and agrees with what the index reports for the committed record
    assert abs(seen["staged"] - seen["committed"]) <= 1e-4 * max(1.0, abs(exact))
