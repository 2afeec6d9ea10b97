"""The ``item`` lines of an export (format 4): the LangGraph items a store
holds (integrations/langgraph_items.py), one line per item in key order,
each ``namespace`` (its labels), ``key``, ``value`` (the JSON object),
``created_at``/``updated_at`` (microseconds since the epoch, UTC) and
``refs`` (``[owner, record id]`` pairs: the records its indexed texts ended
in). An import loads them after every record, each ref checked against the
owner sets it loaded."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterator

from .._store.validation import MAX_TIME_US

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["item_rows", "ItemLoader"]

_PAGE = 1024


def item_rows(store: "Store") -> Iterator[dict[str, Any]]:
    """The store's items as export lines, in key order."""
    engine = store._handles().engine
    after = ("", "")
    while True:
        page = engine.items_page(after[0], after[1], _PAGE)
        for ns, key, value, created, updated, refs in page:
            yield {
                "type": "item",
                "namespace": ns.split("."),
                "key": key,
                "value": json.loads(value),
                "created_at": created,
                "updated_at": updated,
                "refs": [[owner, record] for owner, record in refs],
            }
        if len(page) < _PAGE:
            return
        after = (page[-1][0], page[-1][1])


class ItemLoader:
    """Collects the ``item`` lines of an import and writes them once the
    records are in (`finish`)."""

    def __init__(self, batch: int = 1000) -> None:
        self.rows: list[tuple[int, tuple[Any, ...]]] = []  # (line, engine write)
        self.batch = batch

    def add(self, line: int, row: dict[str, Any]) -> None:
        """One ``item`` line, checked; ``ValueError`` naming the line."""

        def bad(why: str) -> ValueError:
            return ValueError(f"line {line}: {why}")

        ns, key, value = row.get("namespace"), row.get("key"), row.get("value")
        if not isinstance(ns, list) or not ns or not all(isinstance(x, str) and x and "." not in x for x in ns):
            raise bad("'namespace' must be a non-empty list of labels without periods")
        if not isinstance(key, str):
            raise bad("'key' must be a str")
        if not isinstance(value, dict):
            raise bad("'value' must be an object")
        times = []
        for name in ("created_at", "updated_at"):
            t = row.get(name)
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= MAX_TIME_US:
                raise bad(f"{name!r} must be microseconds since the epoch (an int from 0 to {MAX_TIME_US})")
            times.append(t)
        refs = row.get("refs", [])
        if not isinstance(refs, list) or not all(
            isinstance(r, list)
            and len(r) == 2
            and isinstance(r[0], str)
            and isinstance(r[1], int)
            and not isinstance(r[1], bool)
            and r[1] > 0
            for r in refs
        ):
            raise bad("'refs' must be a list of [owner, record id] pairs")
        text = json.dumps(value, ensure_ascii=False)
        self.rows.append((line, (".".join(ns), key, False, text, times[0], times[1], [tuple(r) for r in refs], -1)))

    def finish(self, store: "Store") -> int:
        """Writes the items (after the records); returns how many."""
        engine = store._handles().engine
        for i in range(0, len(self.rows), self.batch):
            chunk = self.rows[i : i + self.batch]
            try:
                engine.item_write([w for _, w in chunk])
            except (ValueError, KeyError) as e:
                raise ValueError(f"item lines {chunk[0][0]}-{chunk[-1][0]}: {e}") from None
        return len(self.rows)
