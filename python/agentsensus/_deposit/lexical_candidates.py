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

Within one batch the engine ranks against the store as the batch's earlier
items leave it (their new records and changed texts: the overlay), so each
item of a batch is ranked as depositing the items one by one would rank it.
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

    def __init__(self, hits: list[list[tuple[int, float, float]]], also: list[dict[int, float]], k: int = 0) -> None:
        self._hits = hits  # per statement: (id, bm25, cosine), best first, none a vector candidate
        self._also = also  # per statement: the bm25 of its vector candidates
        self._k = k  # how many a statement's lexical search adds

    def union(self, i: int, cands: list[Cand], staged_sims: Optional[Any]) -> tuple[list[Cand], dict[int, float]]:
        """Statement i's vector candidates, then its lexical hits not among
        them; and every candidate's BM25 score. A staged hit's cosine comes
        from staged_sims (the engine's kernel, as for the vector ones)."""
        lexical = {rid: self._also[i].get(rid, 0.0) for _, rid in cands}
        out = list(cands)
        added = 0
        for rid, bm25, cos in self._hits[i]:
            if rid in lexical:
                lexical[rid] = bm25
                continue
            if added == self._k:
                break
            if rid < 0:
                cos = float(staged_sims[i, -rid - 1]) if staged_sims is not None else math.nan
            out.append((cos, rid))
            lexical[rid] = bm25
            added += 1
        return out, lexical
