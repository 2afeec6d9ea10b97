"""The lexical search (cpp/src/lexical/lexical_index.cpp, max-score pruned BM25) against
a reference that scores every record: on random small corpora, with a
batch's overlay of new records and ids left out (a statement's vector
candidates), its top k and the scores of the vector candidates it is given
are exactly the reference's."""

from __future__ import annotations

import contextlib
import math
import re

import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, unit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lexical_reference import MOST_OF, mutual_coverage, weighed_queries

K1, B = 1.2, 0.75
# Few words, some in nearly every text, so ties, frequent words and pruning all occur.
VOCAB = ["told", "told", "told", "said", "scene", "3", "4", "ghost", "arras", "Polonius", "König", "sword", "rue", "x"]


def words(text: str) -> list[bytes]:
    runs = re.findall(rb"[A-Za-z0-9\x80-\xff]+", text.encode("utf-8"))
    return [r.lower()[:64] for r in runs if len(r) >= 2 or r.isdigit()]


def reference(
    docs: dict[int, str], query: str, k: int, exclude: frozenset[int] = frozenset()
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """BM25 of every doc, summed over the query's words rarest first (ties by
    word), the engine's order; the top k by float score, ties to the lower
    committed id, the overlay's new records (negative ids) after them."""
    bags = {i: words(t) for i, t in docs.items()}
    n = len(bags)
    avgdl = sum(len(b) for b in bags.values()) / n if sum(len(b) for b in bags.values()) else 1.0
    terms = []
    for w in sorted(set(words(query))):
        df = sum(1 for b in bags.values() if w in b)
        if df:
            terms.append((-math.log(1 + (n - df + 0.5) / (df + 0.5)), w))
    terms.sort()
    score = {i: 0.0 for i in bags}
    for neg_idf, w in terms:
        idf = -neg_idf
        for i, b in bags.items():
            t = b.count(w)
            if t:
                score[i] += idf * t * (K1 + 1) / (t + K1 * (1 - B + B * len(b) / avgdl))
    tie = {i: (i if i > 0 else (1 << 63) - i) for i in bags}
    hits = ((i, float(np.float32(s))) for i, s in score.items() if s > 0 and i not in exclude)
    ranked = sorted(hits, key=lambda x: (-x[1], tie[x[0]]))
    return ranked[:k], score


texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=7).map(" ".join)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    stored=st.lists(texts, min_size=1, max_size=30),
    new=st.lists(texts, max_size=4),
    query=texts,
    k=st.integers(0, 6),
    also_picks=st.lists(st.integers(0, 40), max_size=4),
    exclude_picks=st.lists(st.integers(0, 40), max_size=3),
)
def test_the_top_k_is_the_reference_bm25s(tmp_path_factory, stored, new, query, k, also_picks, exclude_picks):
    path = str(tmp_path_factory.mktemp("lexs") / "s")
    with Store(path, dim=DIM, lexical_candidates=0, min_similarity=0.999) as s:
        ids = s.deposit("a", stored, np.stack([unit(i) for i in range(len(stored))])).ids
        docs = {rid: s.get(rid).text for rid in set(ids)}  # exact duplicates are one record
        overlay = [(-(j + 1), t, True) for j, t in enumerate(new)]
        docs.update({-(j + 1): t for j, t in enumerate(new)})
        keys = sorted(docs)
        also = [keys[p % len(keys)] for p in also_picks]
        exclude = [keys[p % len(keys)] for p in exclude_picks]
        got = s._engine.lexical(unit(99)[None], [query], k, overlay, [also], "", [exclude])
        offs, got_ids, got_scores, _, also_scores, _, _, _ = got
        want, score = reference(docs, query, k, frozenset(exclude))
        assert list(zip(got_ids.tolist(), got_scores.tolist())) == want
        assert list(offs) == [0, len(want)]
        assert also_scores[0] == [float(np.float32(score[i])) for i in also]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    stored=st.lists(texts, min_size=40, max_size=150),
    query=st.lists(st.sampled_from(VOCAB), min_size=2, max_size=9).map(" ".join),
    k=st.integers(1, 10),
)
def test_the_top_k_of_a_larger_corpus_is_the_reference_bm25s(tmp_path_factory, stored, query, k):
    # More records than the search's first accumulator table holds (it grows,
    # and is rebuilt when the search drops records that cannot reach the top k).
    path = str(tmp_path_factory.mktemp("lexl") / "s")
    with Store(path, dim=DIM, lexical_candidates=0, min_similarity=0.999) as s:
        ids = s.deposit("a", stored, np.stack([unit(i) for i in range(len(stored))])).ids
        docs = {rid: s.get(rid).text for rid in set(ids)}
        offs, got_ids, got_scores, _, _, _, _, _ = s._engine.lexical(unit(99)[None], [query], k, [], [[]], "", [[]])
        want, _ = reference(docs, query, k)
        assert list(zip(got_ids.tolist(), got_scores.tolist())) == want


# What the floor's and the mutual coverage's properties search: stored
# records, a batch's staged ones, a query of the same words and a k.
SEARCHED = dict(
    stored=st.lists(texts, min_size=1, max_size=60),
    new=st.lists(texts, max_size=4),
    query=st.lists(st.sampled_from(VOCAB + ["moor", "bell"]), min_size=1, max_size=9).map(" ".join),
    k=st.integers(1, 8),
)


@contextlib.contextmanager
def _stored_and_staged(tmp_path_factory, stored, new):
    """A store holding ``stored`` (each its own record, one owner), the texts
    of every record by id, ``new`` as a batch's staged records (the overlay
    the engine's lexical call takes) among them at ids -1, -2, ..."""
    path = str(tmp_path_factory.mktemp("lex") / "s")
    with Store(path, dim=DIM, lexical_candidates=0, min_similarity=0.999) as s:
        ids = s.deposit("a", stored, np.stack([unit(i) for i in range(len(stored))])).ids
        docs = {rid: s.get(rid).text for rid in set(ids)}
        overlay = [(-(j + 1), t, True) for j, t in enumerate(new)]
        docs.update({-(j + 1): t for j, t in enumerate(new)})
        yield s, docs, overlay


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    **SEARCHED,
    floor=st.sampled_from([0.05, 0.1, 0.2, 0.3, 0.5, 0.9]),
    also_picks=st.lists(st.integers(0, 70), max_size=4),
    exclude_picks=st.lists(st.integers(0, 70), max_size=3),
)
def test_a_floor_leaves_the_hits_that_reach_it_as_the_reference_ranks_them(
    tmp_path_factory, stored, new, query, k, floor, also_picks, exclude_picks
):
    # With a floor the engine weighs the text itself (as weighed_queries does) and
    # may leave out hits below the least score: those that reach it are the
    # reference's top k that reach it, in order, with the same scores.
    with _stored_and_staged(tmp_path_factory, stored, new) as (s, docs, overlay):
        keys = sorted(docs)
        also = [keys[p % len(keys)] for p in also_picks]
        exclude = [keys[p % len(keys)] for p in exclude_picks]
        counts = s._engine.lexical_word_counts([query], overlay, "")
        (weighed,), (least,) = weighed_queries(counts, floor)
        _, (best,) = weighed_queries(counts, 1.0)
        got = s._engine.lexical(unit(99)[None], [query], k, overlay, [also], "", [exclude], floor)
        offs, got_ids, got_scores, _, also_scores, _, got_least, got_most_of = got
        assert got_least == [least]
        # the score from which a hit holds most of the query (it passes a similarity gate)
        assert got_most_of == [MOST_OF * best if best > 0 else math.inf]
        want, score = reference(docs, weighed.decode(), k, frozenset(exclude))
        reached = [(i, x) for i, x in zip(got_ids.tolist(), got_scores.tolist()) if x >= least]
        assert reached == [(i, x) for i, x in want if x >= least]
        assert also_scores[0] == [float(np.float32(score[i])) for i in also]


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    **SEARCHED,
    mutual=st.sampled_from([0.1, 0.2, 0.35, 0.5, 0.7]),
)
def test_mutual_coverage_leaves_out_the_hits_the_reference_leaves_out(tmp_path_factory, stored, new, query, k, mutual):
    # As a deposit asks (lexical_floor f: floor f squared, mutual f): of the reference's top k that reach
    # the least score, the engine keeps exactly those that hold most of the query's best score or whose
    # mutual coverage reaches mutual.
    with _stored_and_staged(tmp_path_factory, stored, new) as (s, docs, overlay):
        floor = mutual * mutual
        (weighed,), (least,) = weighed_queries(s._engine.lexical_word_counts([query], overlay, ""), floor)
        got = s._engine.lexical(unit(99)[None], [query], k, overlay, [[]], "", [[]], floor, mutual)
        _, got_ids, got_scores, _, _, _, _, _ = got
        want, _ = reference(docs, weighed.decode(), k)
        reached = [(i, x) for i, x in want if x >= least]
        best = least / floor
        shares = [x / best if best > 0 else 0.0 for _, x in reached]
        laid = [query] + [docs[i] for i, _ in reached]
        (cover,) = mutual_coverage(s._engine.lexical_word_counts(laid, overlay, ""), [shares])
        # on a bound, rounding may go either way
        assume(all(abs(c - mutual) > 1e-9 and abs(x - MOST_OF) > 1e-6 for c, x in zip(cover, shares)))
        kept = [h for h, c, x in zip(reached, cover, shares) if x >= MOST_OF or c >= mutual]
        assert [(i, x) for i, x in zip(got_ids.tolist(), got_scores.tolist()) if x >= least] == kept


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lengths=st.lists(st.integers(0, 2), min_size=10, max_size=80),
    extra=st.lists(st.sampled_from(["ghost", "arras", "rue"]), max_size=2),
    k=st.integers(1, 8),
)
def test_ties_on_a_word_every_record_holds_go_to_the_lower_ids(tmp_path_factory, lengths, extra, k):
    # Every record holds "common" once, among 0-2 words of its own: scores tie
    # in whole groups, and the search reads the word in full keeping only the
    # records that can still pass the k best seen, ties to the lower id.
    stored = [" ".join(["common"] + [f"w{i}x{j}" for j in range(n)]) for i, n in enumerate(lengths)]
    stored += [f"common {w}" for w in extra]
    path = str(tmp_path_factory.mktemp("lext") / "s")
    with Store(path, dim=DIM, lexical_candidates=0, min_similarity=0.999) as s:
        ids = s.deposit("a", stored, np.stack([unit(i) for i in range(len(stored))])).ids
        docs = {rid: s.get(rid).text for rid in set(ids)}
        for query in ["common", "common " + " ".join(extra)]:
            got = s._engine.lexical(unit(99)[None], [query], k, [], [[]], "", [[]])
            want, _ = reference(docs, query, k)
            assert list(zip(got[1].tolist(), got[2].tolist())) == want
