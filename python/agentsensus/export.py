"""A store as JSON Lines: what ``agentsensus export PATH`` writes.

One JSON object per line, each with a ``"type"``, in this order:

- ``store``: ``format``, ``version`` (of agentsensus), ``dim``, ``metric``
  and ``stats``;
- ``record``: ``id``, ``text``, ``owners`` (sorted), ``round`` and ``edges``
  (the affiliation neighbours, ascending), one per record in id order;
- ``merge``: ``survivor``, ``kept``, ``discarded``, ``owner``, ``round``, the
  merge log oldest first;
- ``key``: a Planfence key with its ``owner``, ``head``, every ``versions``
  entry the lineage holds (``version``, ``value_b64``: the value in base64)
  and the ``frontier`` of its head (``key``, ``owner``, ``version``,
  ``digest`` in hex), one per key in key order.

What the engine does not expose yet is not written: the stored vectors, the
inputs of versions older than a key's head, and which frontier links are
direct inputs rather than reached through them. An importer that restores
a store exactly needs those, and an engine call that keeps record ids.
"""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterator, TextIO

from ._version import __version__
from .fence import UnknownKeyError

if TYPE_CHECKING:
    from .store import Store

__all__ = ["FORMAT", "Exported", "export_rows", "export_jsonl"]

#: The version of the line format above.
FORMAT = 1


@dataclass(frozen=True)
class Exported:
    """How many lines of each type an export wrote."""

    records: int = 0
    merges: int = 0
    keys: int = 0


def _key_row(store: "Store", key: str) -> dict[str, Any]:
    fence = store.fence
    head = fence.head(key)
    versions = []
    for v in range(1, head + 1):
        try:
            value = fence.value(key, v)
        except UnknownKeyError:  # an observed key holds only the versions it was shown
            continue
        versions.append({"version": v, "value_b64": base64.b64encode(value).decode("ascii")})
    frontier = [
        {"key": link.key, "owner": link.owner, "version": link.version, "digest": link.digest.hex()}
        for link in fence.frontier(key)
    ]
    return {"type": "key", "key": key, "owner": fence.owner(key), "head": head, "versions": versions,
            "frontier": frontier}


def export_rows(store: "Store") -> Iterator[dict[str, Any]]:
    """The export of ``store`` as dicts, one per line, in the order above."""
    yield {"type": "store", "format": FORMAT, "version": __version__, "dim": store.dim, "metric": store.metric,
           "stats": asdict(store.stats())}
    for m in store.records():
        yield {"type": "record", "id": m.id, "text": m.text, "owners": sorted(m.owners), "round": m.round,
               "edges": store.neighbors(m.id)}
    for g in store.merges():
        yield {"type": "merge", **asdict(g)}
    for key in store.fence.keys():
        yield _key_row(store, key)


def export_jsonl(store: "Store", out: TextIO) -> Exported:
    """Writes the export of ``store`` to ``out`` as JSON Lines (UTF-8 text,
    not ASCII-escaped, so texts read as written); returns the counts."""
    counts = {"record": 0, "merge": 0, "key": 0}
    for row in export_rows(store):
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
        if row["type"] in counts:
            counts[row["type"]] += 1
    return Exported(counts["record"], counts["merge"], counts["key"])
