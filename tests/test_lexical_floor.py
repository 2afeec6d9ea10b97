"""Lexical candidates must earn their place (_deposit/lexical_candidates.py):
a hit below ``lexical_floor`` times the statement's best possible BM25 score
is no candidate, words most of the scope holds weigh nothing, and a
statement left with no candidate is a new record without a judge request."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agentsensus import Store
from agentsensus._deposit.lexical_candidates import weighed_queries
from helpers import DIM, RecordingJudge

E = np.eye(DIM, dtype=np.float32)  # orthogonal vectors: no vector candidate anywhere

# Every record holds "the" and "at"; each its own other words.
RECORDS = [
    "the miller sold flour at the market",
    "the smith forged a blade at the forge",
    "the abbot rang the bell at the chapel",
    "the ferryman rowed across at the river",
]


def store_of(path: str, judge: RecordingJudge, **kw) -> Store:
    s = Store(path, dim=DIM, judge=judge, min_similarity=0.5, **kw)
    for n, text in enumerate(RECORDS):
        s.deposit(f"w{n}", [text], E[n][None])
    judge.calls.clear()
    return s


def test_sharing_only_words_most_records_hold_asks_nothing(tmp_path):
    judge = RecordingJudge()
    with store_of(str(tmp_path / "s"), judge) as s:
        d = s.deposit("x", ["the weather turned at dusk"], E[8][None])
        assert judge.calls == [] and d.merged == [False] and s.stats().records == 5
    # without the floor every shared word weighs, "the" and "at" too: the judge is asked
    judge = RecordingJudge()
    with store_of(str(tmp_path / "t"), judge, lexical_floor=0) as s:
        s.deposit("x", ["the weather turned at dusk"], E[8][None])
        assert len(judge.calls) == 1 and len(judge.calls[0][0].candidates) == 4


def test_a_hit_below_the_floor_is_no_candidate(tmp_path):
    # shares "bell" only, one word of seven that weigh: about a seventh of its best score
    text = "a bell was heard far over the moor tonight"
    judge = RecordingJudge()
    with store_of(str(tmp_path / "s"), judge) as s:
        d = s.deposit("x", [text], E[8][None])
        assert judge.calls == [] and d.merged == [False]
    judge = RecordingJudge()
    with store_of(str(tmp_path / "t"), judge, lexical_floor=0.1) as s:
        s.deposit("x", [text], E[8][None])
        (req,) = judge.calls[0]
        assert [c.text for c in req.candidates] == [RECORDS[2]]


def test_a_hit_sharing_most_of_the_statement_reaches_the_judge(tmp_path):
    judge = RecordingJudge()
    with store_of(str(tmp_path / "s"), judge) as s:
        s.deposit("x", ["I hear the abbot rang the chapel bell"], E[8][None])
        (req,) = judge.calls[0]
        assert [c.text for c in req.candidates] == [RECORDS[2]] and req.candidates[0].lexical_score > 0


def test_the_best_score_is_the_statements_own_as_a_record():
    # 9 records of mean length 5; "the" in 8 of them (more than half: no weight), "bell" in 1, "moor" in none
    counts = (9.0, 5.0, [[(b"the", 2, 8.0), (b"bell", 1, 1.0), (b"moor", 1, 0.0)]])
    (query,), (floor,) = weighed_queries(counts, 0.5)
    assert query == b"bell moor"
    # each kept word: idf (a word no record holds as held by one) times BM25's count part, length 4 of mean 5
    idf = math.log(1 + (9 - 1 + 0.5) / (1 + 0.5))
    part = 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 4 / 5))
    assert floor == pytest.approx(0.5 * 2 * idf * part)
    # a word held by a single record is never "most of the scope", even of a scope of one
    (query,), _ = weighed_queries((1.0, 3.0, [[(b"bell", 1, 1.0)]]), 0.5)
    assert query == b"bell"


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "0.3", None])
def test_a_bad_lexical_floor_is_refused(tmp_path, bad):
    with pytest.raises(ValueError, match="lexical_floor must be a number from 0 to 1"):
        Store(str(tmp_path / "s"), dim=DIM, lexical_floor=bad)
    assert not (tmp_path / "s").exists()
