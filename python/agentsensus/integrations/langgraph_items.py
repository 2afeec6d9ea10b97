"""The LangGraph items of a ``ConsensusStore``, in the store's own LMDB
environment (the engine's ``lg_items`` and ``lg_item_refs`` tables,
docs/file-format.md).

A consensus record holds text and owners, not a key-value item, so the
items live beside the records: one row per (namespace, key) with its JSON
value, timestamps and the records its indexed texts ended in (each held for
an owner). A put that indexes texts writes its row in the transaction of
its deposit (`ItemBatch` rides in ``Store``'s commit), so the row and
its records cannot disagree after a crash. The reverse index takes a recall
hit back to its items; a record no item of its owner uses any more comes
back from the write as *unused*, for the owner to forget.

Stores written before the items moved here kept them in ``langgraph.sqlite3``
beside the store: `migrate_sqlite` moves them in, and a writable
``ConsensusStore`` does so on open.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

if TYPE_CHECKING:
    from ..store import Store

__all__ = [
    "ItemRow",
    "ItemTable",
    "ItemBatch",
    "join_namespace",
    "split_namespace",
    "migrate_sqlite",
    "SQLITE_NAME",
    "now_us",
]

#: The file earlier versions kept the items in, beside the store.
SQLITE_NAME = "langgraph.sqlite3"

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def join_namespace(namespace: Sequence[str]) -> str:
    """A namespace as one string. LangGraph forbids periods in labels, so
    joining with a period is reversible."""
    return ".".join(namespace)


def split_namespace(ns: str) -> tuple[str, ...]:
    """The inverse of `join_namespace`."""
    return tuple(ns.split("."))


def now_us() -> int:
    """Now, in microseconds since the epoch (UTC): the items' clock."""
    return time.time_ns() // 1000


def to_datetime(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def to_us(dt: datetime) -> int:
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return (dt - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True)
class ItemRow:
    """One stored item; ``refs`` are the (owner, record) pairs of its indexed texts."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    refs: tuple[tuple[str, int], ...] = ()


def _row(r: Sequence[Any]) -> ItemRow:
    ns, key, value, created, updated, refs = r
    return ItemRow(split_namespace(ns), key, json.loads(value), to_datetime(created), to_datetime(updated), tuple(refs))


@dataclass
class ItemBatch:
    """Item writes for one commit: ``rows`` as the engine takes them; after
    the commit, ``unused`` holds the (owner, record) pairs they let go of."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    unused: list[tuple[str, int]] = field(default_factory=list)

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: Optional[dict[str, Any]],
        updated_us: int,
        *,
        deposit: int = -1,
        refs: Sequence[tuple[str, int]] = (),
        created_us: int = -1,
    ) -> None:
        """A put (``value=None``: a delete). ``deposit``: the index of the
        commit's deposit whose records the item's texts ended in."""
        text = "" if value is None else json.dumps(value, ensure_ascii=False)
        self.rows.append(
            (join_namespace(namespace), key, value is None, text, created_us, updated_us, list(refs), deposit)
        )


class ItemTable:
    """The items of the store ``store`` (read through its engine)."""

    def __init__(self, store: "Store") -> None:
        self.store = store

    def _engine(self) -> Any:
        return self.store._handles().engine

    def get(self, namespace: Sequence[str], key: str) -> Optional[ItemRow]:
        """The item, or None."""
        r = self._engine().item_get(join_namespace(namespace), key)
        return _row(r) if r is not None else None

    def under(self, prefix: Sequence[str]) -> list[ItemRow]:
        """Items under ``prefix``, most recently updated first."""
        rows = [_row(r) for r in self._engine().items_under(join_namespace(prefix))]
        rows.sort(key=lambda r: (-to_us(r.updated_at), join_namespace(r.namespace), r.key))
        return rows

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding an item, sorted."""
        return sorted(split_namespace(n) for n in self._engine().item_namespaces())

    def items_of(self, owner: str, records: Iterable[int], prefix: Sequence[str]) -> dict[int, list[ItemRow]]:
        """For each record, the items under ``prefix`` whose texts ended in it, for this owner."""
        p = join_namespace(prefix)
        out: dict[int, list[ItemRow]] = {}
        for rid, r in self._engine().items_of(owner, [int(x) for x in records]):
            ns = r[0]
            if p and ns != p and not ns.startswith(p + "."):
                continue
            out.setdefault(int(rid), []).append(_row(r))
        return out

    def write(self, batch: ItemBatch) -> list[tuple[str, int]]:
        """Applies a batch that names no deposit, in one transaction; returns
        the (owner, record) pairs no item uses any more."""
        if self.store.readonly:
            from ..errors import Error

            raise Error(f"the store at {self.store.path} is open read-only")
        return [(o, int(r)) for o, r in self._engine().item_write(batch.rows)]


def migrate_sqlite(
    store: "Store", path: str, *, progress: Optional[Callable[[int, int], None]] = None, batch: int = 1000
) -> int:
    """Moves the items of the SQLite file ``path`` (earlier versions' item
    file) into ``store`` and renames the file to ``<path>.migrated``; returns
    how many items moved. A text row whose record its owner no longer owns
    (the two files could disagree after a crash) is dropped: the item stays,
    without that index entry. An item the store already holds is not
    overwritten. ``progress(done, total)`` is called after each batch."""
    engine = store._handles().engine
    db = sqlite3.connect(path)
    try:
        total = int(db.execute("SELECT count(*) FROM items").fetchone()[0])
        texts: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for ns, key, owner, record in db.execute("SELECT ns, key, owner, record FROM texts"):
            texts.setdefault((ns, key), []).append((owner, int(record)))
        owned: dict[str, set[int]] = {}
        done = 0
        pending = ItemBatch()
        for ns, key, value, created, updated in db.execute(
            "SELECT ns, key, value, created_at, updated_at FROM items ORDER BY ns, key"
        ):
            done += 1
            if engine.item_get(ns, key) is not None:
                continue  # moved by an earlier run that stopped before the rename
            refs = []
            for owner, record in texts.get((ns, key), []):
                if owner not in owned:
                    try:
                        owned[owner] = set(store.owned(owner))
                    except (KeyError, ValueError):
                        owned[owner] = set()
                if record in owned[owner]:
                    refs.append((owner, record))
            pending.put(
                split_namespace(ns),
                key,
                json.loads(value),
                to_us(datetime.fromisoformat(updated)),
                refs=refs,
                created_us=to_us(datetime.fromisoformat(created)),
            )
            if len(pending.rows) >= batch:
                engine.item_write(pending.rows)
                pending = ItemBatch()
                if progress:
                    progress(done, total)
        if pending.rows:
            engine.item_write(pending.rows)
        if progress:
            progress(done, total)
    finally:
        db.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    os.replace(path, path + ".migrated")
    return done


def stderr_progress(path: str) -> Callable[[int, int], None]:
    """A progress callback for `migrate_sqlite` that writes one line,
    rewritten at most twice a second, to stderr."""
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.5 or done == total:
            last[0] = now
            end = "\n" if done == total else ""
            print(f"\rmoving LangGraph items of {path} into the store: {done:,} of {total:,}", end=end, file=sys.stderr)

    return show
