"""A lexical hit must also be near the statement by vector
(``Store(lexical_min_similarity=...)``, _deposit/lexical_candidates.py): a
hit less similar than the gate is no candidate, the gate never asks more
than ``min_similarity`` does, it is off unless given, and whether the
lexical step scores the near records alone, searches the scope or does not
run, the requests are those without the gate less the hits below it."""

from __future__ import annotations

import math
import os
from typing import Optional
from unittest import mock

import numpy as np
import pytest
from agentsensus import Store, embedders
from agentsensus._deposit.plan import BatchPlanner
from helpers import DIM, RecordingJudge
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

E = np.eye(DIM, dtype=np.float32)
RECORD = "the abbot rang the bell at the chapel"
SAID = "I hear the abbot rang the chapel bell"  # shares most of RECORD's words
# shares the abbot and the frame's small words: a lexical hit, but one that holds less than half of what it says
APART = "the abbot and the miller crossed the river at the ferry"


def at_cosine(c: float) -> np.ndarray:
    """A unit vector at cosine c to E[0]."""
    return (c * E[0] + np.sqrt(1 - c * c) * E[9]).astype(np.float32)


def shown(path: str, cos: float, said: str = APART, **kw) -> list[list[str]]:
    """The candidate texts of each judge request for said, its vector at
    cosine cos to RECORD's."""
    judge = RecordingJudge()
    with Store(path, dim=DIM, judge=judge, **kw) as s:
        s.deposit("a", [RECORD], E[0][None])
        s.deposit("b", [said], at_cosine(cos)[None])
    return [[c.text for c in r.candidates] for call in judge.calls for r in call]


@pytest.mark.parametrize("near", [True, False])
def test_a_hit_less_similar_than_the_gate_is_no_candidate(tmp_path, near):
    # cosine 0.5: no vector candidate (min_similarity 0.75), a lexical one unless the gate is above 0.5;
    # near False: prepare reports no near records, so the engine searches the scope
    args = BatchPlanner._near_args if near else (lambda self: (0, math.inf))
    with mock.patch.object(BatchPlanner, "_near_args", args):
        assert shown(str(tmp_path / "a"), 0.5) == [[RECORD]]
        assert shown(str(tmp_path / "b"), 0.5, lexical_min_similarity=0.4) == [[RECORD]]
        assert shown(str(tmp_path / "c"), 0.5, lexical_min_similarity=0.6) == []  # no request: a new record
        assert shown(str(tmp_path / "d"), 0.65, lexical_min_similarity=0.6) == [[RECORD]]


@pytest.mark.parametrize("near", [True, False])
def test_a_hit_holding_most_of_the_statement_passes_any_gate(tmp_path, near):
    # A witness's frame can move a true restatement's vector far from its record's: a record scoring at
    # least half of the statement's best BM25 score is a candidate however far its vector is, whether the
    # lexical step scored the near records (none here) and searched the scope for such hits, or searched it.
    args = BatchPlanner._near_args if near else (lambda self: (0, math.inf))
    with mock.patch.object(BatchPlanner, "_near_args", args):
        assert shown(str(tmp_path / "a"), 0.5, SAID, lexical_min_similarity=0.6) == [[RECORD]]
        assert shown(str(tmp_path / "b"), 0.1, SAID, lexical_min_similarity=0.75) == [[RECORD]]
        assert shown(str(tmp_path / "c"), 0.1, APART, lexical_min_similarity=0.75) == []


def test_the_gate_asks_no_more_than_min_similarity(tmp_path):
    # One vector candidate (candidates=1) goes to a nearer record; the lexical hit at cosine 0.5 reaches
    # min_similarity 0.3, so a gate of 0.9 counts as 0.3 for it.
    judge = RecordingJudge()
    with Store(str(tmp_path / "s"), dim=DIM, judge=judge, candidates=1, min_similarity=0.3,
               lexical_min_similarity=0.9) as s:  # fmt: skip
        s.deposit("a", [RECORD], E[0][None])
        s.deposit("a", ["a ferry crossed the river"], at_cosine(0.2)[None])
        assert s.lexical_min_similarity == 0.9
        s.deposit("b", [SAID], (0.5 * E[0] + 0.8 * E[9] + 0.33 * E[3]).astype(np.float32)[None])
    (req,) = judge.calls[-1]
    assert [c.text for c in req.candidates] == ["a ferry crossed the river", RECORD]


def test_the_gate_is_off_unless_given(tmp_path):
    # A cosine scale is the embedder's own, and a frame can push a true restatement far below any one
    # floor (docs/performance.md, "Judge requests"): the store never picks one itself.
    with Store(str(tmp_path / "a"), embed=embedders.hash) as s:
        assert s.lexical_min_similarity is None
    with Store(str(tmp_path / "b"), dim=DIM, lexical_min_similarity=0.5) as s:
        assert s.lexical_min_similarity == 0.5
    with Store(str(tmp_path / "b")) as s:  # a setting of the open, not kept in the store
        assert s.lexical_min_similarity is None


def test_a_gated_batch_of_two_scopes_meets_only_its_own_scopes_records(tmp_path):
    # A batch of items of two scopes is prepared one scope at a time: each item's near records, and so
    # its lexical candidates, are its own scope's.
    other = "the abbot rang the bell at the chapel at dawn"
    judge = RecordingJudge()
    with Store(str(tmp_path / "s"), dim=DIM, judge=judge, lexical_min_similarity=0.4) as s:
        s.deposit("x", [RECORD], E[0][None], scope="a")
        s.deposit("y", [other], E[0][None], scope="b")
        items = [
            s._item("alice", [SAID], at_cosine(0.5)[None], 0, "a"),
            s._item("bob", [SAID], at_cosine(0.5)[None], 0, "b"),
        ]
        s._run(items, None)
        assert s.verify() == []
    shown_to = {r.owner: [c.text for c in r.candidates] for call in judge.calls for r in call}
    assert shown_to == {"alice": [RECORD], "bob": [other]}


@pytest.mark.parametrize("bad", ["0.5", True, [0.5]])
def test_a_gate_that_is_no_number_is_refused_with_nothing_written(tmp_path, bad):
    path = str(tmp_path / "s")
    with pytest.raises(TypeError, match="lexical_min_similarity must be a number or None"):
        Store(path, dim=DIM, lexical_min_similarity=bad)
    assert not os.path.exists(path)


WORDS = "abbot bell chapel river ferry market miller flour forge blade moor rain".split()


def _requests(
    path: str, stream: list[tuple[str, np.ndarray]], batch: bool, most_of: Optional[dict[str, float]] = None, **kw
) -> dict[str, list]:
    """Each statement's last judge request: its candidates (text, score,
    BM25 score); most_of (if given) gets each statement's score from which
    a hit holds most of it, as the deposit's lexical step reported it."""
    judge = RecordingJudge()
    plan = BatchPlanner._lexical

    def recorded(self, item, *args, **kwargs):  # type: ignore[no-untyped-def]
        got = plan(self, item, *args, **kwargs)
        if most_of is not None and got is not None:
            for text, score in zip(item.statements, got._most_of):
                most_of[text] = score
        return got

    with (
        mock.patch.object(BatchPlanner, "_lexical", recorded),
        Store(path, dim=DIM, judge=judge, lexical_candidates=64, **kw) as s,
    ):
        half = len(stream) // 2
        for text, v in stream[:half]:
            s.deposit("a", [text], v[None])
        if batch:  # the rest in one batch: earlier items' new records are candidates of later ones
            s.deposit_many([("b", [text], v[None]) for text, v in stream[half:]])
        else:
            for text, v in stream[half:]:
                s.deposit("b", [text], v[None])
    out: dict[str, list] = {}
    for call in judge.calls:
        for r in call:
            out[r.statement] = [(c.text, c.score, c.lexical_score) for c in r.candidates]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=3, max_size=6).map(" ".join), min_size=4, max_size=14, unique=True
    ),
    seed=st.integers(0, 2**16),
    gate=st.sampled_from([0.0, 0.2, 0.4, 0.6]),
    batch=st.booleans(),
    near=st.booleans(),
    floor=st.sampled_from([0.0, 0.1, 0.35]),
)
def test_the_gate_only_leaves_out_hits_below_it(tmp_path_factory, texts, seed, gate, batch, near, floor):
    # Whatever the statement's nearest record, and whether the lexical step scored the near records
    # (and searched the scope for hits holding most of the statement) or searched the scope (near False:
    # prepare reports none), the requests are those without the gate less the lexical hits below it that
    # hold less than half of the statement (no truncation: 64 lexical candidates).
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((len(texts), DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    stream = list(zip(texts, vecs))
    d = tmp_path_factory.mktemp("gate")
    plain = _requests(str(d / "plain"), stream, batch, min_similarity=0.7, lexical_floor=floor)
    args = BatchPlanner._near_args if near else (lambda self: (0, math.inf))  # near False: prepare reports none
    most_of: dict[str, float] = {}  # the gate does not change it: the same records are stored either way
    with mock.patch.object(BatchPlanner, "_near_args", args):
        gated = _requests(
            str(d / "gated"), stream, batch, most_of, min_similarity=0.7, lexical_floor=floor,
            lexical_min_similarity=gate,
        )  # fmt: skip
    want = {}
    for text, cands in plain.items():
        kept = [c for c in cands if c[1] >= 0.7 or c[1] >= gate or c[2] >= most_of.get(text, math.inf)]
        if kept:
            want[text] = kept
    assert gated.keys() == want.keys()
    for text in want:
        assert [c[0] for c in gated[text]] == [c[0] for c in want[text]]
        np.testing.assert_allclose([c[1] for c in gated[text]], [c[1] for c in want[text]], rtol=1e-6)
        # the BM25 scores too: scoring the near records alone sums the same words in the same order
        assert [c[2] for c in gated[text]] == [c[2] for c in want[text]]
