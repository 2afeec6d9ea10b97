"""What an owner reads under ``Store(disclosure="own_words")``: each record
as that owner deposited it, never as another owner did.

Under ``"shared"`` (the default, the paper's behaviour) ``recall`` and
``get(id, owner=...)`` show a record as the store holds it: its text, which
a merge may have taken from another owner's statement (``keep_names`` keeps
the wording with more names), and its whole owner set. Under
``"own_words"`` they show the reading owner only its own part of each
record it owns, read from the record's statements (the said rows: every
statement that ended in a record, kept with its depositor):

- ``text`` is one of the owner's own statements in the record: in
  ``recall`` the one most similar to the query, in ``get`` its earliest
  (the lowest round, then the first in text order; an owner whose two
  statements merged into one record has both there); ``round`` is that
  statement's round;
- ``owners`` is the owner alone;
- ``score`` is the query's similarity to that statement's own vector (not to
  the record's, which is one depositor's: the first, until it forgets), and the hits are
  the owner's ``k`` records whose statements score highest: an exact scan
  of every record the owner owns, so its cost grows with what the owner
  holds;
- ``recall(..., lexical=True)`` fuses that ranking (reciprocal rank fusion,
  as the shared one) with BM25 over the owner's own statements alone;
  ``lexical_score`` is the best of the owner's statements in the record;
- no affiliation hop: ``expand`` is accepted and does nothing. An edge
  joins the records of one deposit, whoever made it, and the store keeps no
  record of whose deposit that was, so an edge may be another owner's
  grouping of the caller's records;
- ``created_at`` and ``updated_at`` are ``None``: they are the shared
  record's times (another owner's deposit, a merge that changed its text);
- ``metadata`` is the owner's own, as under ``"shared"``; ``where`` takes
  only the owner's metadata keys (``round``, ``created_at`` and
  ``updated_at`` are the shared record's, refused with ``ValueError``).

So nothing another owner does to a record (its merge rewriting the text,
its name joining the owner set, an edge its deposit adds, its forget)
changes what an owner reads. The one exception: a record without statements
(written by a store of schema 1, before the said rows) cannot be told apart
into owners' words, so it is shown, with its text, only to a sole owner; a
shared one is left out of ``recall`` and is a ``KeyError`` for
``get(id, owner=...)``, so another owner's merge into it takes it from its
owner's reads (rather than show that owner the merged text).

What ``own_words`` does not hide, and the store-wide reads it does not
cover, are in docs/reliability.md ("Owners of one record: what each reads").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Mapping, NamedTuple, Optional, Protocol

import numpy as np

from ..records import Memory
from .embedder_setting import no_embed_message
from .record_meta import decode_metadata, encode_where
from .validation import check_query
from .versions import with_as_of


class Store(Protocol):
    """What these reads use of the store: its handles and how it embeds a
    query. A protocol, so this module never imports the store."""

    embed: Any
    dim: int
    metric: str
    embedder_name: Optional[str]

    def _handles(self) -> Any: ...


__all__ = ["DISCLOSURES", "check_disclosure", "own_recall", "own_get"]

#: The values of ``Store(disclosure=...)``.
DISCLOSURES = ("shared", "own_words")

# where fields that are the shared record's, not the reading owner's.
_RECORD_FIELDS = frozenset({"round", "created_at", "updated_at"})
# Reciprocal rank fusion's constant, as the engine's (cpp/src/store/store_lexical.cpp).
_RRF = 60.0
# BM25's usual parameters.
_K1, _B = 1.2, 0.75
_WORD = re.compile(r"\w+")


def check_disclosure(disclosure: Any) -> str:
    """``disclosure`` when it is one of `DISCLOSURES`; else a one-line ``ValueError``."""
    if not isinstance(disclosure, str) or disclosure not in DISCLOSURES:
        raise ValueError(f"disclosure must be 'shared' or 'own_words', got {disclosure!r}")
    return disclosure


class _Said(NamedTuple):
    """One owner's statements in one record, by round, then text."""

    texts: list[str]
    rounds: list[int]
    vectors: np.ndarray  # (len(texts), dim) float32, as the store keeps them


def _statements(engine: Any, rid: int, owner: str) -> Optional[_Said]:
    """``owner``'s statements in record ``rid`` (one read of the record);
    ``None`` when the record is gone, is not ``owner``'s, or holds no
    statement of ``owner`` it may show (see the module's docstring)."""
    if rid < 1:
        return None
    rows, vectors = engine.dump(rid - 1, 1)  # the first record after rid - 1, with its said rows and vector
    if not rows or rows[0][0] != rid:
        return None
    _id, text, owners, rnd, _deposit, _edges, _digests, said = rows[0]
    if owner not in owners:
        return None
    if not said:  # schema 1: no statement per owner
        if tuple(owners) != (owner,):
            return None
        return _Said([text], [int(rnd)], np.asarray(vectors[:1], dtype=np.float32))
    # In an order of their own (round, then text), not the rows' n: another
    # owner's forget renumbers the row whose vector the record takes over.
    mine = sorted((r for r in said if r[1] == owner), key=lambda r: (r[2], r[3]))
    if not mine:
        return None
    # Row 0's vector is the record's; the others carry their own.
    vecs = [vectors[0] if not r[4] else np.frombuffer(r[4], dtype=np.float32) for r in mine]
    return _Said([r[3] for r in mine], [int(r[2]) for r in mine], np.stack(vecs).astype(np.float32, copy=False))


def own_get(store: Store, rid: int, owner: str) -> Memory:
    """``store.get(rid, owner=owner)`` under ``own_words``: the owner's earliest
    statement in the record, the owner alone as its owners, the owner's
    metadata. ``KeyError`` when the owner does not own the record (or may
    not be shown it)."""
    engine = store._handles().engine
    said = _statements(engine, rid, owner)
    if said is None:
        raise KeyError(f"record {rid} is not owned by {owner!r}")
    meta = engine.get_meta(rid, owner)[6]
    return Memory(rid, said.texts[0], frozenset((owner,)), said.rounds[0], None, "", decode_metadata(meta))


def _check_where(where: Mapping[str, Any]) -> None:
    for field, cond in where.items():
        if field == "$and" and isinstance(cond, (list, tuple)):
            for c in cond:
                if isinstance(c, Mapping):
                    _check_where(c)
        elif field in _RECORD_FIELDS:
            raise ValueError(
                f"where: {field} is the shared record's, not shown under disclosure='own_words'; "
                "filter on the owner's metadata keys"
            )


def own_recall(
    store: Store,
    owner: str,
    query: Any,
    k: int,
    where: Optional[dict[str, Any]],
    threshold: Optional[float],
    scope: Optional[str],
    lexical: bool,
    as_of: Optional[int] = None,
) -> list[Memory]:
    """``store.recall`` under ``own_words`` (``owner``, ``k``, ``scope`` and
    ``threshold`` checked by it): the owner's ``k`` records whose own
    statements are nearest the query, each shown as the module's docstring
    says."""
    engine = store._handles().engine
    text: Optional[str] = None
    if lexical:
        if where is not None or threshold is not None:
            raise ValueError("recall(lexical=True) takes no where= or threshold=")
        if not isinstance(query, str):
            raise TypeError("recall(lexical=True) needs the query as a str (its words are searched)")
        text = query
    spec = b""
    if where is not None:
        spec = encode_where(where)  # its own checks first: a bad where reads as it does under "shared"
        _check_where(where)
    floor = float("-inf") if threshold is None else threshold
    if isinstance(query, str):
        if store.embed is None:
            raise TypeError("query is a str, but " + no_embed_message(store.embedder_name, "pass a vector"))
        query = store.embed([query])
    q = check_query(query, store.dim, store.metric)
    ids = [int(i) for i in engine.owned(owner)]
    if scope is not None:
        ids = [i for i, s in zip(ids, engine.scopes_of(ids)) if s == scope]
    spec = with_as_of(spec, as_of)
    if ids:
        # The engine evaluates where on the owner's metadata, and keeps the
        # records current for it (or held at as_of); k covers every record it owns.
        kept = engine.recall_memories(owner, scope, q, len(ids), False, spec, float("-inf"), Memory, decode_metadata)
        passing = {m.id for m in kept}
        ids = [i for i in ids if i in passing]
    found = [(i, s) for i in ids if (s := _statements(engine, i, owner)) is not None]
    if not found:
        return []
    sims = engine.similarities(engine.prepare_vectors(q[None, :]), np.concatenate([s.vectors for _, s in found]))[0]
    best: dict[int, tuple[float, int, _Said]] = {}  # id -> (score, statement, statements)
    at = 0
    for rid, said in found:
        mine = sims[at : at + len(said.texts)]
        at += len(said.texts)
        j = int(np.argmax(mine))  # ties: the earliest statement
        best[rid] = (float(mine[j]), j, said)
    by_vector = sorted(best, key=lambda rid: (-best[rid][0], rid))
    words: dict[int, float] = {}
    if text is not None:
        words = _bm25(text, {rid: said.texts for rid, (_s, _j, said) in best.items()})
        depth = max(2 * k, 20)
        by_words = sorted((rid for rid in words if words[rid] > 0), key=lambda rid: (-words[rid], rid))[:depth]
        fused: dict[int, float] = {}
        for ranking in (by_vector[:depth], by_words):
            for r, rid in enumerate(ranking):
                fused[rid] = fused.get(rid, 0.0) + 1.0 / (_RRF + r + 1)
        order = sorted(fused, key=lambda rid: (-fused[rid], rid))
    else:
        order = [rid for rid in by_vector if best[rid][0] >= floor]
    out = []
    for rid in order[:k]:
        score, j, said = best[rid]
        meta = engine.get_meta(rid, owner)[6]
        out.append(
            Memory(
                rid,
                said.texts[j],
                frozenset((owner,)),
                said.rounds[j],
                score,
                "hit",
                decode_metadata(meta),
                lexical_score=words.get(rid, 0.0) if text is not None else None,
            )
        )
    return out


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _bm25(query: str, texts: dict[int, list[str]]) -> dict[int, float]:
    """Per record, the best BM25 score of its statements for ``query``, the
    statements of ``texts`` (the owner's own) being the whole corpus."""
    docs = [(rid, Counter(_tokens(t))) for rid, ts in texts.items() for t in ts]
    n = len(docs)
    mean = sum(sum(c.values()) for _, c in docs) / max(n, 1) or 1.0
    df: Counter[str] = Counter()
    for _, c in docs:
        df.update(c.keys())
    terms = set(_tokens(query))
    out: dict[int, float] = {}
    for rid, c in docs:
        length = sum(c.values())
        s = 0.0
        for w in terms:
            f = c.get(w, 0)
            if f:
                idf = math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * f * (_K1 + 1) / (f + _K1 * (1 - _B + _B * length / mean))
        out[rid] = max(out.get(rid, 0.0), s)
    return out
