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
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:
    from .deposit_plan import BatchPlanner, Item

__all__ = ["LexicalCandidates"]

# (score, record id): a candidate as the planner ranks it
Cand = tuple[float, int]


class LexicalCandidates:
    """One item's lexical hits, fetched before its candidates are built."""

    def __init__(self, hits: list[list[tuple[int, float, float]]], also: list[dict[int, float]], k: int = 0) -> None:
        self._hits = hits  # per statement: (id, bm25, cosine), best first, none a vector candidate
        self._also = also  # per statement: the bm25 of its vector candidates
        self._k = k  # how many a statement's lexical search adds

    @classmethod
    def fetch(
        cls, planner: "BatchPlanner", item: "Item", base: int, staged_sims: Optional[Any], scope: str = ""
    ) -> Optional["LexicalCandidates"]:
        """The engine's lexical top ``planner.lexical_k`` for each statement
        of the item (prepare's base is its first statement), as the batch so
        far leaves the store; None when lexical candidates are off. Rows of
        committed hits that prepare's snapshot lacked join the planner's
        committed records."""
        k = getattr(planner, "lexical_k", 0)
        if k <= 0:
            return None
        n = len(item.statements)
        # Only statements that will meet candidates: not exact duplicates of a record or of the batch's.
        need = [i for i in range(n) if item.digests[i] not in planner.by_digest and not planner._exact[base + i]]
        hits: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]
        also_of: list[dict[int, float]] = [{} for _ in range(n)]
        if not need:
            return cls(hits, also_of)
        offsets = planner._offsets[base : base + n + 1]
        vector: list[list[int]] = []  # the vector search's hits, for their BM25 scores
        shown: list[list[int]] = []  # the vector candidates the judge will see: never lexical hits
        for i in need:
            ids: list[int] = planner._ids[offsets[i] : offsets[i + 1]].tolist()  # at most planner.k
            staged: list[int] = []
            if staged_sims is not None:
                staged = np.flatnonzero(staged_sims[i] >= planner.min_similarity).tolist()
            if not staged:
                vector.append(ids)
                shown.append(ids)
                continue
            assert staged_sims is not None
            cands: list[Cand] = list(zip(planner._scores[offsets[i] : offsets[i + 1]].tolist(), ids))
            cands += [(float(staged_sims[i, j]), -(j + 1)) for j in staged]
            # as BatchPlanner.begin ranks and cuts them (union checks it)
            cands.sort(key=lambda c: (-c[0], c[1] if c[1] > 0 else (1 << 62) - c[1]))
            vector.append(ids + [-(j + 1) for j in staged])
            shown.append([rid for _, rid in cands[: planner.k]])
        committed = planner._committed
        # (id, text, may be a hit): the batch's new records of other scopes count in the statistics only,
        # as they would once committed
        overlay = [(rid, s.text, True) for rid, s in planner.existing.items() if s.text != committed[rid][0]]
        overlay += [(-(j + 1), s.text, s.scope == scope) for j, s in enumerate(planner.new)]
        vecs = item.vectors if len(need) == n else item.vectors[need]
        texts = item.statements if len(need) == n else [item.statements[i] for i in need]
        if len(planner._base) == 1:
            # A batch of one item: no later pass plans it again (Passes reuses its first plan).
            answer = planner.engine.lexical(vecs, texts, k, overlay, vector, scope, shown)
        else:
            # A later pass replans an item on the same staged state: the same question, asked once per attempt.
            cache = planner.__dict__.setdefault("_lexical_cache", {})
            key = (base, scope, tuple(overlay), tuple(tuple(v) for v in vector), tuple(tuple(v) for v in shown))
            if key not in cache:
                cache[key] = planner.engine.lexical(vecs, texts, k, overlay, vector, scope, shown)
            answer = cache[key]
        offs, ids_, scores, sims, also, records = answer
        for rid, row in records.items():
            committed.setdefault(rid, row)
        ids_, scores, sims = ids_.tolist(), scores.tolist(), sims.tolist()
        for q, i in enumerate(need):
            a, b = offs[q], offs[q + 1]
            hits[i] = list(zip(ids_[a:b], scores[a:b], sims[a:b]))
            also_of[i] = dict(zip(vector[q], also[q]))
        return cls(hits, also_of, k)

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
