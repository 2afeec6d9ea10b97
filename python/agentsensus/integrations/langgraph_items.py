"""The LangGraph items of a ``ConsensusStore``, in a SQLite file beside the store.

A consensus record holds text and owners, not a key-value item, so the
items live here: one row per (namespace, key) with its JSON value and
timestamps, and one row per indexed text with the record it ended in. The
record rows are the bridge from a recall hit back to items, and count how
many items of an owner still use a record (a record no item uses any more
is forgotten by that owner).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

__all__ = ["ItemRow", "ItemTable", "join_namespace", "split_namespace"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    PRIMARY KEY (ns, key)
);
CREATE INDEX IF NOT EXISTS items_updated ON items (updated_at);
CREATE TABLE IF NOT EXISTS texts (
    ns TEXT NOT NULL, key TEXT NOT NULL, path TEXT NOT NULL,
    owner TEXT NOT NULL, record INTEGER NOT NULL,
    PRIMARY KEY (ns, key, path)
);
CREATE INDEX IF NOT EXISTS texts_record ON texts (owner, record);
"""


def join_namespace(namespace: Sequence[str]) -> str:
    """A namespace as one string. LangGraph forbids periods in labels, so
    joining with a period is reversible."""
    return ".".join(namespace)


def split_namespace(ns: str) -> tuple[str, ...]:
    """The inverse of :func:`join_namespace`."""
    return tuple(ns.split("."))


@dataclass(frozen=True)
class ItemRow:
    """One stored item."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


def _row(r: Sequence[Any]) -> ItemRow:
    return ItemRow(split_namespace(r[0]), r[1], json.loads(r[2]), r[3], r[4])


# Items under a prefix: the namespace itself, or one that continues it.
_UNDER = "(:p = '' OR ns = :p OR substr(ns, 1, length(:p) + 1) = :p || '.')"


class ItemTable:
    """The SQLite file of items and their records. Thread-safe; several
    processes may share the file (SQLite locks it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.RLock()

    def close(self) -> None:
        """Closes the file; calling it again does nothing."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None  # type: ignore[assignment]

    def get(self, namespace: Sequence[str], key: str) -> Optional[ItemRow]:
        """The item, or None."""
        with self._lock:
            r = self._db.execute(
                "SELECT ns, key, value, created_at, updated_at FROM items WHERE ns = ? AND key = ?",
                (join_namespace(namespace), key),
            ).fetchone()
        return _row(r) if r else None

    def under(self, prefix: Sequence[str]) -> Iterator[ItemRow]:
        """Items under ``prefix``, most recently updated first."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT ns, key, value, created_at, updated_at FROM items WHERE {_UNDER} "
                "ORDER BY updated_at DESC, ns, key",
                {"p": join_namespace(prefix)},
            ).fetchall()
        return (_row(r) for r in rows)

    def namespaces(self, prefix: Sequence[str] = ()) -> list[tuple[str, ...]]:
        """Every namespace holding an item (under ``prefix``), sorted."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT DISTINCT ns FROM items WHERE {_UNDER} ORDER BY ns", {"p": join_namespace(prefix)}
            ).fetchall()
        return sorted(split_namespace(r[0]) for r in rows)

    def items_of(self, owner: str, records: Iterable[int], prefix: Sequence[str]) -> dict[int, list[tuple[str, str]]]:
        """For each record, the (joined namespace, key) of the items under
        ``prefix`` whose texts ended in it, for this owner."""
        ids = list(records)
        out: dict[int, list[tuple[str, str]]] = {}
        with self._lock:
            for i in range(0, len(ids), 500):  # SQLite bounds the host parameters
                chunk = ids[i : i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT record, ns, key FROM texts WHERE owner = ? AND record IN ({marks}) "
                    f"AND (? = '' OR ns = ? OR substr(ns, 1, length(?) + 1) = ? || '.')",
                    [owner, *chunk, *([join_namespace(prefix)] * 4)],
                ).fetchall()
                for record, ns, key in rows:
                    out.setdefault(int(record), []).append((ns, key))
        return out

    def get_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], ItemRow]:
        """Items by (joined namespace, key)."""
        out: dict[tuple[str, str], ItemRow] = {}
        with self._lock:
            for ns, key in set(keys):
                r = self._db.execute(
                    "SELECT ns, key, value, created_at, updated_at FROM items WHERE ns = ? AND key = ?", (ns, key)
                ).fetchone()
                if r:
                    out[(ns, key)] = _row(r)
        return out

    def records(self, namespace: Sequence[str], key: str) -> list[tuple[str, int]]:
        """(owner, record) of each indexed text of the item."""
        with self._lock:
            rows = self._db.execute(
                "SELECT owner, record FROM texts WHERE ns = ? AND key = ?", (join_namespace(namespace), key)
            ).fetchall()
        return [(o, int(r)) for o, r in rows]

    def in_use(self, owner: str, record: int) -> bool:
        """Whether any item of ``owner`` still has a text in ``record``."""
        with self._lock:
            r = self._db.execute(
                "SELECT 1 FROM texts WHERE owner = ? AND record = ? LIMIT 1", (owner, record)
            ).fetchone()
        return r is not None

    def write(
        self,
        namespace: Sequence[str],
        key: str,
        value: Optional[dict[str, Any]],
        now: str,
        texts: Sequence[tuple[str, str, int]] = (),
    ) -> None:
        """Puts (or, with ``value=None``, deletes) one item and replaces its
        text rows with ``texts``: (path, owner, record) each, in one
        transaction."""
        ns = join_namespace(namespace)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("DELETE FROM texts WHERE ns = ? AND key = ?", (ns, key))
                if value is None:
                    self._db.execute("DELETE FROM items WHERE ns = ? AND key = ?", (ns, key))
                else:
                    self._db.execute(
                        "INSERT INTO items (ns, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                        "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                        (ns, key, json.dumps(value, ensure_ascii=False), now, now),
                    )
                    self._db.executemany(
                        "INSERT OR REPLACE INTO texts (ns, key, path, owner, record) VALUES (?, ?, ?, ?, ?)",
                        [(ns, key, path, owner, record) for path, owner, record in texts],
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
