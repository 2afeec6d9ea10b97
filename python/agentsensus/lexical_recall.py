"""The Store's uses of the lexical index outside the deposit path: building
it for a store made before it, and ``recall(..., lexical=True)``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

from .embedder_setting import no_embed_message
from .records import Memory
from .validation import check_query

if TYPE_CHECKING:
    from .store import Store

__all__ = ["build_lexical_index", "fused_recall"]

# Below this many records the build takes well under a second: no progress line.
_QUIET_BELOW = 20_000


def build_lexical_index(engine: Any, path: str) -> None:
    """Indexes every record's words in one write transaction (the engine
    skips it when another process built it first), with a progress line on
    stderr for a large store."""
    shown = [-1]

    def progress(done: int, total: int) -> None:
        if total < _QUIET_BELOW:
            return
        tenth = done * 10 // max(total, 1)
        if tenth != shown[0]:
            shown[0] = tenth
            end = "\n" if done >= total else ""
            print(f"\ragentsensus: indexing words of {path}: {done:,}/{total:,} records", end=end, file=sys.stderr)

    engine.build_lexical(progress)


def fused_recall(
    store: "Store",
    engine: Any,
    owner: str,
    query: Any,
    k: int,
    expand: bool,
    where: Optional[dict[str, Any]],
    threshold: Optional[float],
) -> list[Memory]:
    """recall with the vector and the lexical ranking fused (the engine's
    recall_fused: reciprocal rank fusion over each ranking's top max(2k, 20))."""
    if where is not None or threshold is not None:
        raise ValueError("recall(lexical=True) takes no where= or threshold=")
    if not isinstance(query, str):
        raise TypeError("recall(lexical=True) needs the query as a str (its words are searched)")
    if store.embed is None:
        raise TypeError("query is a str, but " + no_embed_message(store.embedder_name, "pass a vector"))
    text = query
    q = check_query(store.embed([text]), store.dim, store.metric)
    rows = engine.recall_fused(owner, q, text, k, expand)
    return [
        Memory(i, t, frozenset(o), r, s, v, lexical_score=float(lex) if v == "hit" else None)
        for (i, t, o, r, s, v), lex in rows
    ]
