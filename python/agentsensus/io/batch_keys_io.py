"""The ``batch`` lines of an export (format 4): the batch keys of exactly-once
``deposit_many`` calls (agentsensus._deposit.batch_keys), one line per key in key
order, each ``key``, ``digest`` (hex, 16 bytes: what the batch deposited),
``ids`` and ``merged`` (per deposit, per statement: the record it ended in
and whether it merged). An import loads them after every record, so a batch
retried against the imported copy is still a no-op."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["batch_rows", "BatchKeyLoader"]

_PAGE = 1024


def batch_rows(store: "Store") -> Iterator[dict[str, Any]]:
    """The store's batch keys as export lines, in key order."""
    engine = store._handles().engine
    after = b""
    while True:
        page = engine.batch_keys(after, _PAGE)
        for key, (digest, ids, merged) in page:
            yield {
                "type": "batch",
                "key": key.decode("utf-8"),
                "digest": digest.hex(),
                "ids": [list(i) for i in ids],
                "merged": [list(m) for m in merged],
            }
        if len(page) < _PAGE:
            return
        after = page[-1][0]


class BatchKeyLoader:
    """Collects the ``batch`` lines of an import and writes them once the
    records and counters are in (`finish`)."""

    def __init__(self, batch: int = 1000) -> None:
        self.rows: list[tuple[int, tuple[Any, ...]]] = []  # (line, engine row)
        self.seen: set[str] = set()
        self.batch = batch

    def add(self, line: int, row: dict[str, Any]) -> None:
        """One ``batch`` line, checked; ``ValueError`` naming the line."""

        def bad(why: str) -> ValueError:
            return ValueError(f"line {line}: {why}")

        key, digest, ids, merged = row.get("key"), row.get("digest"), row.get("ids"), row.get("merged")
        if not isinstance(key, str) or not key:
            raise bad("'key' must be a non-empty str")
        if key in self.seen:
            raise bad(f"batch key {key!r} appears twice")
        try:
            raw = bytes.fromhex(digest) if isinstance(digest, str) else b""
        except ValueError:
            raw = b""
        if len(raw) != 16:
            raise bad("'digest' must be 32 hex digits")
        shape_ok = (
            isinstance(ids, list)
            and isinstance(merged, list)
            and len(ids) == len(merged)
            and all(isinstance(i, list) and isinstance(m, list) and len(i) == len(m) for i, m in zip(ids, merged))
            and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for i in ids for x in i)
            and all(isinstance(x, bool) for m in merged for x in m)
        )
        if not shape_ok:
            raise bad("'ids' and 'merged' must be matching lists of lists (positive ids, booleans)")
        self.seen.add(key)
        self.rows.append((line, (key.encode("utf-8"), raw, ids, merged)))

    def finish(self, store: "Store") -> int:
        """Writes the collected keys; returns how many."""
        engine = store._handles().engine
        for i in range(0, len(self.rows), self.batch):
            part = self.rows[i : i + self.batch]
            try:
                engine.load_batch_keys([r for _, r in part])
            except (ValueError, KeyError) as e:
                raise ValueError(f"lines {part[0][0]}-{part[-1][0]}: {e}") from None
        return len(self.rows)
