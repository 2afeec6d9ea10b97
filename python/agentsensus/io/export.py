"""A store as JSON Lines: what ``agentsensus export PATH`` writes and
``agentsensus import`` reads back into the same store.

One JSON object per line, each with a ``"type"``, in this order:

- ``store``: ``format``, ``version`` (of agentsensus), ``dim``, ``metric``,
  ``stats``, ``counters`` (``next_id``, ``next_merge``, ``deposits``: where
  the store's numbering goes on) and ``agents`` (every owner name the store
  has seen, in the order it first saw them);
- ``record``: ``id``, ``text``, ``owners`` (sorted), ``round``, ``deposit``
  (the number of the deposit that created it), ``edges`` (the affiliation
  neighbours, ascending), ``digests`` (hex digests of the normalized texts
  that exact-duplicate detection maps to it) and ``vector`` (the stored
  float32 vector, little-endian, base64) and ``said`` (the statements that
  ended in it, each ``n``, ``owner``, ``round``, ``text`` and, but for
  ``n`` 0, whose vector is the record's, its ``vector`` as above), and,
  when the store has them, ``created_at``/``updated_at`` (microseconds since
  the epoch) and ``metadata`` (owner name -> that owner's metadata object),
  and ``scope`` (its scope's name; left out for the default scope ``""``),
  and ``supersedes`` (the id of the record it superseded in its chain of
  versions; left out when none), one per record in id order;
- ``merge``: ``seq``, ``survivor``, ``kept``, ``discarded``, ``owner``,
  ``round``, the merge log oldest first;
- (the ``store`` line also holds ``embedder``, the name of the embedder
  the store records, when it records one: ``""`` for an unnamed callable);
- ``key``: a Planfence key with its ``owner``, ``head``, every ``versions``
  entry the lineage holds (``version``, ``kind``: publish, derive or
  observe, ``digest`` in hex, ``value_b64``: the value in base64, and for a
  derived version its ``inputs`` as ``[key, version]`` pairs) and, for
  readers, the ``frontier`` of its head (``key``, ``owner``, ``version``,
  ``digest`` in hex), one per key in key order;
- ``item``: a LangGraph item (`agentsensus.io.items_io`), one per
  item in key order;
- ``batch``: an exactly-once batch key (`agentsensus.io.batch_keys_io`),
  one per key in key order.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterator, TextIO

import numpy as np

from .. import _core
from .._version import __version__
from .batch_keys_io import batch_rows
from .items_io import item_rows

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["FORMAT", "Exported", "export_rows", "export_jsonl"]

#: The version of the line format above. Format 1 (no vectors, digests or
#: version inputs) could not be imported; formats 2 (no ``said``), 3 (no
#: side tables: no ``item`` lines) and 4 (no ``supersedes``) still are.
FORMAT = 5

_PAGE = 1024


@dataclass(frozen=True)
class Exported:
    """How many lines of each type an export wrote."""

    records: int = 0
    merges: int = 0
    keys: int = 0


def _key_row(store: "Store", key: str) -> dict[str, Any]:
    fence = store.fence
    versions = [
        {
            "version": int(v),
            "kind": kind.name,
            "digest": digest.hex(),
            "value_b64": base64.b64encode(value).decode("ascii"),
            **({"inputs": [[k, int(iv)] for k, iv in inputs]} if kind is _core.LineageKind.derive else {}),
        }
        for v, kind, digest, value, inputs in store._handles().lineage.versions(key)
    ]
    frontier = [
        {"key": link.key, "owner": link.owner, "version": link.version, "digest": link.digest.hex()}
        for link in fence.frontier(key)
    ]
    return {
        "type": "key",
        "key": key,
        "owner": fence.owner(key),
        "head": fence.head(key),
        "versions": versions,
        "frontier": frontier,
    }


def _b64_f32(vec: Any) -> str:
    return base64.b64encode(np.ascontiguousarray(vec, dtype="<f4").tobytes()).decode("ascii")


def _record_rows(store: "Store") -> Iterator[dict[str, Any]]:
    engine = store._handles().engine
    after = 0
    while True:
        rows, vectors = engine.dump(after, _PAGE)
        if not rows:
            return
        # Times and metadata (side tables): at most one row per record of this page.
        meta = {m[0]: m for m in engine.meta_dump(after, _PAGE) if m[0] <= rows[-1][0]}
        ids = [r[0] for r in rows]
        scopes = engine.scopes_of(ids)  # a record's scope never changes: any snapshot agrees
        # A record's predecessor is made before it and never changes while
        # both live; a forget between pages joins the chain around the record
        # gone, and the import checks the result (I21).
        older = [links[0] for links in engine.versions_of(ids)]
        for (rid, text, owners, rnd, deposit, edges, digests, said), vec, scope, prev in zip(
            rows, vectors, scopes, older
        ):
            yield {
                "type": "record",
                "id": rid,
                "text": text,
                "owners": sorted(owners),
                "round": rnd,
                "deposit": deposit,
                "edges": list(edges),
                "digests": [d.hex() for d in digests],
                "vector": _b64_f32(vec),
                "said": [
                    {
                        "n": n,
                        "owner": o,
                        "round": r,
                        "text": t,
                        **({"vector": _b64_f32(np.frombuffer(vb, dtype=np.float32))} if vb else {}),
                    }
                    for n, o, r, t, vb in said
                ],
                **_record_meta_fields(meta.get(rid)),
                **({"scope": scope} if scope else {}),
                **({"supersedes": prev} if prev else {}),
            }
        after = rows[-1][0]


def _record_meta_fields(meta: Any) -> dict[str, Any]:
    """A record line's ``created_at``/``updated_at`` (microseconds since the
    epoch) and ``metadata`` (owner -> object), each left out when absent."""
    if meta is None:
        return {}
    _rid, created, updated, per_owner = meta
    out: dict[str, Any] = {}
    if created is not None:
        out["created_at"], out["updated_at"] = created, updated
    if per_owner:
        out["metadata"] = {owner: json.loads(text) for owner, text in per_owner}
    return out


def _merge_rows(store: "Store") -> Iterator[dict[str, Any]]:
    engine = store._handles().engine
    after = 0
    while True:
        page = engine.merges(after, _PAGE)
        if not page:
            return
        for seq, survivor, kept, discarded, owner, rnd in page:
            yield {
                "type": "merge",
                "seq": seq,
                "survivor": survivor,
                "kept": kept,
                "discarded": discarded,
                "owner": owner,
                "round": rnd,
            }
        after = page[-1][0]


def export_rows(store: "Store") -> Iterator[dict[str, Any]]:
    """The export of ``store`` as dicts, one per line, in the order above."""
    engine = store._handles().engine
    next_id, next_merge, deposits = engine.counters()
    yield {
        "type": "store",
        "format": FORMAT,
        "version": __version__,
        "dim": store.dim,
        "metric": store.metric,
        "stats": asdict(store.stats()),
        "counters": {"next_id": next_id, "next_merge": next_merge, "deposits": deposits},
        "agents": list(engine.owner_names()),
        **({"embedder": store.embedder_name} if store.embedder_name is not None else {}),
    }
    yield from _record_rows(store)
    yield from _merge_rows(store)
    for key in store.fence.keys():
        yield _key_row(store, key)
    yield from item_rows(store)
    yield from batch_rows(store)


def export_jsonl(store: "Store", out: TextIO) -> Exported:
    """Writes the export of ``store`` to ``out`` as JSON Lines (UTF-8 text,
    not ASCII-escaped, so texts read as written); returns the counts."""
    counts = {"record": 0, "merge": 0, "key": 0}
    for row in export_rows(store):
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if row["type"] in counts:
            counts[row["type"]] += 1
    return Exported(counts["record"], counts["merge"], counts["key"])
