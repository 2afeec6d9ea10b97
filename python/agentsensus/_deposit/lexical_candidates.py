"""A deposit's lexical candidates: the records the store's lexical index
(BM25 over the records' words; docs/file-format.md, "Lexical index") ranks highest for a
statement, added to its vector candidates before the judge sees them.

A witness's frame ("I heard Horatio say ...") can outweigh the content in
the vector, so the true record of an event may sit below ``min_similarity``
or outside the vector top ``candidates``; the words it shares with the
statement still find it. Each statement's candidates are its vector
candidates (best first by cosine) and then the ``lexical_candidates``
records BM25 ranks highest among those the vector search did not find
(best first by BM25): a lexical hit that is a vector candidate already
leaves its place to the next one, so the lexical search always adds up to
``lexical_candidates`` records; every candidate carries both scores.

Lexical hits must earn their place, so that the judge is asked only about
records that could tell the same fact. A statement's best possible score is
the BM25 score its own text would get as a record of the scope (``best``):
every word of it held, as often as it says it; a record's best is its own
text's. A hit whose score is more than half of the statement's best
(``MOST_OF``) holds most of what the statement says: it is a candidate
whatever else it says, since the statement may tell a part of its fact
("Stand." of "Stand, ho! Who's there?"). Below that, coverage must be
mutual: the hit's score over the statement's best (how much of the
statement the record holds) and the statement's score as a record for the
hit's words over the hit's best (how much of the record the statement
holds), each counted at most whole; a hit whose geometric mean of the two is
below ``lexical_floor`` is left out. A record that shares a name, a place
and the statement's frame holds a part of the statement but says a fact of
its own besides, which the statement does not hold; a restatement holds
most of its record. And a word that more than half of the scope's records
hold (the statement counted in) carries no weight at all, in the scores and
in the best ones: it is not left out of the search by a stop list, it is
the point where Robertson and Spärck Jones' idf, log((N - df + 0.5) / (df +
0.5)), turns negative, which BM25's variant here (log(1 + ...)) only makes
small. A statement whose candidates all fall below the floor, and below
``min_similarity``, meets no candidate: it becomes a new record without a
judge request. ``lexical_floor=0`` turns all of it off: every hit, every
word weighing as BM25 weighs it.

``lexical_min_similarity`` (off by default) gates the hits by vector as
well: a hit less similar to the statement than the gate (capped at
``min_similarity``) is no candidate, unless it holds most of what the
statement says (a score of at least ``MOST_OF`` of its best: the engine's
``most_of``), because a witness's frame can move a true restatement's vector
far from its record's while the words it shares stay. The engine drops
committed hits that fail both before counting their coverage, and ``union``
the batch's new records. With a gate, prepare's vector search also reports
the records at or above it that are not vector candidates (``near``),
searching two deeper than ``candidates``; when that search ended below the
gate, they are all the records the vectors let through, and the engine
scores just them and the batch's new records that pass
(``Engine.lexical(..., only=...)``, the same words in the same order as its
search, so the same scores), and searches the scope only for hits scoring
at least ``most_of``, which prunes the search early. The hits are then the
best by BM25 among those the gate lets through; after a search of the scope
they are those of its top ``lexical_candidates`` that pass, which may be
fewer.

Within one batch the engine ranks against the store as the batch's earlier
items leave it (their new records and changed texts: the overlay), so each
item of a batch is ranked as depositing the items one by one would rank it.

The engine weighs each statement itself, in the one call that searches for
it and on the same snapshot (``Engine.lexical(..., floor=...)``, which
returns each statement's least score), and leaves out of its search the
records that cannot reach that least score: ``lexical_floor`` squared times
the best, since a mutual coverage of f needs a share of at least f squared
from the statement's side. Of the hits that reach it and hold at most
``MOST_OF`` of the best, it leaves out those whose mutual coverage is below
``lexical_floor`` (``Engine.lexical(..., mutual=...)``). The property tests
hold the engine to Python references of both (``weighed_queries`` and
``mutual_coverage``), computed from ``Engine.lexical_word_counts``.
"""

from __future__ import annotations

import math
from typing import Any, Optional

__all__ = ["LexicalCandidates"]

# (score, record id): a candidate as the planner ranks it
Cand = tuple[float, int]


class LexicalCandidates:
    """One item's lexical hits, fetched before its candidates are built
    (``BatchPlanner._lexical``, which knows the batch's staged state)."""

    def __init__(
        self,
        hits: list[list[tuple[int, float, float]]],
        also: list[dict[int, float]],
        k: int = 0,
        floors: Optional[list[float]] = None,
        min_similarity: Optional[float] = None,
        most_of: Optional[list[float]] = None,
    ) -> None:
        self._hits = hits  # per statement: (id, bm25, cosine), best first, none a vector candidate
        self._also = also  # per statement: the bm25 of its vector candidates
        self._k = k  # how many a statement's lexical search adds
        self._floors = floors if floors is not None else [0.0] * len(hits)  # per statement: the least bm25 of a hit
        self._min_sim = min_similarity  # a hit's least cosine (None: any); the planner caps it at min_similarity
        # per statement: the BM25 score from which a hit holds most of it and passes the gate
        self._most_of = most_of if most_of is not None else [math.inf] * len(hits)

    def union(self, i: int, cands: list[Cand], staged_sims: Optional[Any]) -> tuple[list[Cand], dict[int, float]]:
        """Statement i's vector candidates, then its lexical hits not among
        them that reach its floor; and every candidate's BM25 score. A staged
        hit's cosine comes from staged_sims (the engine's kernel, as for the
        vector ones)."""
        lexical = {rid: self._also[i].get(rid, 0.0) for _, rid in cands}
        out = list(cands)
        added = 0
        for rid, bm25, cos in self._hits[i]:
            if rid in lexical:
                lexical[rid] = bm25
                continue
            if added == self._k or bm25 < self._floors[i]:
                break  # best first: the rest are below the floor too
            if rid < 0:
                cos = float(staged_sims[i, -rid - 1]) if staged_sims is not None else math.nan
            if self._min_sim is not None and cos < self._min_sim and not bm25 >= self._most_of[i]:
                continue  # the vectors call it unrelated: the next hit by BM25 may take its place
            out.append((cos, rid))
            lexical[rid] = bm25
            added += 1
        return out, lexical
