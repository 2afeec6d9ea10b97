"""The Store's uses of the lexical index outside the deposit path: building
it for a store made before it, and ``recall(..., lexical=True)``."""

from __future__ import annotations

import sys
from typing import Any, Optional, Protocol

from ..errors import ContentionError
from ..records import Memory
from .embedder_setting import no_embed_message
from .record_meta import decode_metadata, to_datetime
from .validation import check_query

__all__ = ["build_lexical_index", "fused_recall"]

# Below this many records the build takes well under a second: no progress line.
_QUIET_BELOW = 20_000
# A fused recall whose records a concurrent write changed before their
# fields were read ranks again; this many attempts before giving up.
_MAX_ATTEMPTS = 16


class _Embeds(Protocol):
    """What a fused recall reads of its store: how to embed the query.
    A protocol, not ``Store``, so this module never imports the store."""

    embed: Any
    dim: int
    metric: str
    embedder_name: Optional[str]


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
    store: _Embeds,
    engine: Any,
    owner: str,
    query: Any,
    k: int,
    expand: bool,
    where: Optional[dict[str, Any]],
    threshold: Optional[float],
) -> list[Memory]:
    """recall with the vector and the lexical ranking fused (the engine's
    recall_fused: reciprocal rank fusion over each ranking's top max(2k, 20)),
    each row with every field vector recall gives it (metadata, times)."""
    if where is not None or threshold is not None:
        raise ValueError("recall(lexical=True) takes no where= or threshold=")
    if not isinstance(query, str):
        raise TypeError("recall(lexical=True) needs the query as a str (its words are searched)")
    if store.embed is None:
        raise TypeError("query is a str, but " + no_embed_message(store.embedder_name, "pass a vector"))
    text = query
    q = check_query(store.embed([text]), store.dim, store.metric)
    for _ in range(_MAX_ATTEMPTS):
        out = _with_fields(engine, owner, engine.recall_fused(owner, q, text, k, expand))
        if out is not None:
            return out
    raise ContentionError(
        f"recall(lexical=True): the records it found kept changing under {_MAX_ATTEMPTS} attempts; call it again"
    )


def _with_fields(engine: Any, owner: str, rows: list[Any]) -> Optional[list[Memory]]:
    """The fused rows as Memory objects with every field vector recall
    carries: the owner's metadata and the record's times, read with each
    record (one read each). ``None`` when a record changed (text, owners,
    round) or went since the fused ranking read it: the caller ranks again,
    so the fields and the ranking describe the same state."""
    out = []
    links = engine.versions_of([row[0][0] for row in rows]) if rows else []
    for ((i, t, o, r, s, v), lex), (older, newer, until) in zip(rows, links):
        try:
            gi, gt, go, gr, c, u, m = engine.get_meta(i, owner)
        except KeyError:
            return None
        if gt != t or tuple(go) != tuple(o) or gr != r:
            return None
        out.append(
            Memory(
                gi,
                gt,
                frozenset(go),
                gr,
                s,
                v,
                decode_metadata(m),
                to_datetime(c),
                to_datetime(u),
                lexical_score=float(lex) if v == "hit" else None,
                supersedes=older,
                superseded_by=newer,
                valid_until=until,
            )
        )
    return out
