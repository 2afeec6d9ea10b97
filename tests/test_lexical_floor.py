"""Lexical candidates must earn their place (_deposit/lexical_candidates.py):
a hit whose mutual coverage with the statement is below ``lexical_floor``
is no candidate, words most of the scope holds weigh nothing, and a
statement left with no candidate is a new record without a judge request."""

from __future__ import annotations

import math

import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, RecordingJudge
from lexical_reference import MOST_OF, mutual_coverage, weighed_queries

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


# Facts told in different frames: a name, a place and a day are shared by few.
FACTS = [
    "Mara told me that Wren Hale bought the red lantern and a brass clock at the market in Eastbrook on Monday morning",
    "I saw Corin Voss repair the old boat at the harbour in Saltmere on Tuesday",
    "Word at the well is that Ivo Marsh painted the blue cart at the chapel in Redwater",
    "Nell Oakes sold the green map at the forge in Wexley on Thursday, or so I heard",
    "Pell Tull delivered the copper bell to the inn in Lowmoor on Saturday",
]
# another fact of Wren Hale's in Eastbrook, and a restatement of the first fact
OTHER = "Wren Hale smashed the carved fiddle at the library in Eastbrook"
RESTATED = "I saw Wren Hale purchase the red lamp and a brass timepiece at the bazaar in Eastbrook on Monday morning"


def share_of_best(s: Store, text: str, record: str) -> float:
    """The record's BM25 score for text over text's best (the share a floor on one side measures)."""
    counts = s._engine.lexical_word_counts([text], [], "")
    (_,), (best,) = weighed_queries(counts, 1.0)
    _, ids, scores, _, _, records, _, _ = s._engine.lexical(E[15][None], [text], 8, [], [[]], "", [[]], 0.01)
    return next(x for rid, x in zip(ids.tolist(), scores.tolist()) if records[rid][0] == record) / best


def test_a_first_telling_that_shares_only_a_name_and_a_place_is_not_sent_a_restatement_is(tmp_path):
    judge = RecordingJudge(same=lambda a, b: a == RESTATED and b == FACTS[0])
    with Store(str(tmp_path / "s"), dim=DIM, judge=judge, min_similarity=0.5) as s:
        for n, text in enumerate(FACTS):
            s.deposit(f"w{n}", [text], E[n][None])
        judge.calls.clear()
        # The record holds a third of what the statement says (a floor on that side alone would send it),
        # but the statement holds little of the record: its name and place, not its fact.
        assert share_of_best(s, OTHER, FACTS[0]) > 0.3
        d = s.deposit("x", [OTHER], E[8][None])
        assert judge.calls == [] and d.merged == [False] and s.stats().records == 6
        d = s.deposit("y", [RESTATED], E[9][None])
        (req,) = judge.calls[0]
        assert FACTS[0] in [c.text for c in req.candidates] and d.merged == [True]
        assert s.get(d.ids[0]).owners == {"w0", "y"}


def test_mutual_coverage_weighs_both_sides():
    # 10 records of mean length 4. The statement says "wren hale smashed"; the hit "wren hale bought lantern".
    counts = (
        10.0,
        4.0,
        [
            [(b"wren", 1, 2.0), (b"hale", 1, 2.0), (b"smashed", 1, 0.0)],
            [(b"wren", 1, 2.0), (b"hale", 1, 2.0), (b"bought", 1, 1.0), (b"lantern", 1, 1.0)],
        ],
    )
    part3, part4 = (2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * n / 4)) for n in (3, 4))
    idf2, idf1 = (math.log(1 + (10 - df + 0.5) / (df + 0.5)) for df in (2, 1))
    ours = 0.6  # the hit's share of the statement's best, as the engine scores it
    theirs = 2 * idf2 * part3 / ((2 * idf2 + 2 * idf1) * part4)  # the statement as a record, over the hit's own
    (cover,) = mutual_coverage(counts, [[ours]])
    assert cover == [pytest.approx(math.sqrt(ours * theirs))]
    # each share counts at most whole
    ((whole,),) = mutual_coverage(counts, [[3.0]])
    assert whole == pytest.approx(math.sqrt(theirs))


def test_a_statement_that_tells_a_part_of_a_record_is_sent(tmp_path):
    # "Francisco: stand!" holds little of the record's words (its mutual coverage is below the floor), but
    # the record holds most of what it says: the statement may tell a part of that fact.
    record = "Francisco told Bernardo: stand and unfold yourself, who is there at the gate of the castle tonight"
    record += " with Horatio and Marcellus"
    judge = RecordingJudge()
    with Store(str(tmp_path / "s"), dim=DIM, judge=judge, min_similarity=0.5, lexical_floor=0.5) as s:
        for n, text in enumerate([record, *FACTS[1:]]):
            s.deposit(f"w{n}", [text], E[n][None])
        judge.calls.clear()
        part = "Francisco: stand!"
        share = share_of_best(s, part, record)
        ((cover,),) = mutual_coverage(s._engine.lexical_word_counts([part, record], [], ""), [[share]])
        assert share > MOST_OF and cover < 0.5
        s.deposit("x", [part], E[8][None])
        (req,) = judge.calls[0]
        assert [c.text for c in req.candidates] == [record]
