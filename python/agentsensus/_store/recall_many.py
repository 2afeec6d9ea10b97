"""``Store.recall_many``: the recalls of many ``(owner, query)`` pairs in one
engine call. The engine runs them across threads with the GIL released, on
one read snapshot, and each answer equals ``Store.recall`` on that snapshot.

Every pair is checked (owner, query shape and values) before anything runs;
str queries are embedded in one call of the store's embedder. Under
``lexical=True`` or ``disclosure="own_words"`` (both Python-side paths) the
pairs are recalled one by one through ``Store.recall``: the same answers,
none of the batch's speed, and no single snapshot."""

from __future__ import annotations

from typing import Any, Optional, Protocol

import numpy as np

from ..records import Memory
from .embedder_setting import no_embed_message
from .record_meta import decode_metadata, encode_where
from .scopes import check_scope
from .validation import check_k, check_owner, check_query
from .versions import with_as_of

__all__ = ["recall_many"]

_NO_FLOOR = float("-inf")


class Store(Protocol):
    """What the batch uses of the store: its handles, shape, embedder,
    disclosure and single recall. A protocol, so this module never imports
    the store."""

    embed: Any
    dim: int
    metric: str
    embedder_name: Optional[str]
    disclosure: str

    def _handles(self) -> Any: ...

    def recall(
        self,
        owner: str,
        query: Any,
        *,
        k: int = 5,
        expand: bool = True,
        where: Optional[dict[str, Any]] = None,
        threshold: Optional[float] = None,
        lexical: bool = False,
        scope: Optional[str] = None,
        as_of: Optional[int] = None,
    ) -> list[Memory]: ...


def _pairs(queries: Any) -> list[tuple[Any, Any]]:
    if isinstance(queries, (str, bytes, dict)) or not hasattr(queries, "__iter__"):
        raise TypeError(f"queries must be a list of (owner, query) pairs, got {type(queries).__name__}")
    out = []
    for i, pair in enumerate(queries):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"queries[{i}] must be an (owner, query) pair, got {pair!r:.80}")
        out.append((pair[0], pair[1]))
    return out


def _vectors(store: Store, pairs: list[tuple[Any, Any]]) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The queries as one (n, dim) float32 matrix, str ones embedded in one call."""
    fast = _float32_rows(pairs, store.dim)
    if fast is not None:
        return fast
    texts = [i for i, (_, q) in enumerate(pairs) if isinstance(q, str)]
    if texts and store.embed is None:
        raise TypeError(f"queries[{texts[0]}] is a str, but " + no_embed_message(store.embedder_name, "pass a vector"))
    embedded = store.embed([pairs[i][1] for i in texts]) if texts else None
    out = np.empty((len(pairs), store.dim), dtype=np.float32)
    at = {row: j for j, row in enumerate(texts)}
    for i, (_, q) in enumerate(pairs):
        query = embedded[at[i]] if i in at and embedded is not None else q
        try:
            out[i] = check_query(query, store.dim, store.metric)
        except (TypeError, ValueError) as e:
            raise type(e)(f"queries[{i}]: {e}") from None
    return out


def _float32_rows(pairs: list[tuple[Any, Any]], dim: int) -> Optional[np.ndarray[Any, np.dtype[np.float32]]]:
    """The common batch (float32 vectors of shape (dim,)) checked as one
    matrix: one finite, non-zero sum of squares per row proves each row what
    check_query would (it holds the GIL, which the batch's conversion needs
    too). Anything else is None, and the rows are checked one by one, for
    their own messages."""
    qs = [q for _, q in pairs]
    if not all(type(q) is np.ndarray and q.dtype == np.float32 and q.shape == (dim,) for q in qs):
        return None
    m = np.stack(qs)
    sq = np.einsum("ij,ij->i", m, m)
    return m if bool(np.all((sq > 0.0) & (sq < np.inf))) else None


def recall_many(
    store: Store,
    queries: Any,
    k: Any,
    expand: bool,
    where: Optional[dict[str, Any]],
    threshold: Optional[float],
    lexical: bool,
    scope: Optional[str],
    as_of: Optional[int] = None,
) -> list[list[Memory]]:
    """One list of memories per pair, in the pairs' order (Store.recall_many)."""
    engine = store._handles().engine
    pairs = _pairs(queries)
    owners = [check_owner(o, f"queries[{i}] owner", existing=True) for i, (o, _) in enumerate(pairs)]
    k = check_k(k)
    sc = None if scope is None else check_scope(scope)
    if lexical and sc is not None:
        raise ValueError("recall_many takes no scope with lexical=True")
    if lexical and (where is not None or threshold is not None):
        raise ValueError("recall_many(lexical=True) takes no where= or threshold=")
    if lexical and as_of is not None:
        raise ValueError("recall_many takes no as_of with lexical=True")
    spec = with_as_of(b"" if where is None else encode_where(where), as_of)
    floor = _NO_FLOOR if threshold is None else _check_threshold(threshold)
    if lexical or store.disclosure == "own_words":
        for i, (_, q) in enumerate(pairs):
            if lexical and not isinstance(q, str):
                raise TypeError(f"queries[{i}]: lexical=True needs a str query, got {type(q).__name__}")
        if not lexical:
            _vectors(store, pairs)  # every query checked before the first recall
        return [
            store.recall(
                o, q, k=k, expand=expand, where=where, threshold=threshold, lexical=lexical, scope=sc, as_of=as_of
            )
            for o, (_, q) in zip(owners, pairs)
        ]
    if not pairs:
        return []
    matrix = _vectors(store, pairs)
    out: list[list[Memory]] = engine.recall_many_memories(
        owners, sc, matrix, k, bool(expand), spec, floor, Memory, decode_metadata
    )
    return out


def _check_threshold(threshold: Any) -> float:
    # As Store.recall checks it.
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)):
        raise TypeError(f"threshold must be a number, got {type(threshold).__name__}")
    if threshold != threshold:
        raise ValueError("threshold must not be NaN")
    return float(threshold)
