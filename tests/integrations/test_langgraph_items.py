"""The LangGraph items in the store's own LMDB environment: they travel
with export/import and compact, verify (I15) sees a damaged row, and an
earlier version's SQLite item file is moved in on open."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import struct
from typing import Any

import lmdb
import pytest
from agentsensus import Store, embedders
from agentsensus.integrations.langgraph import ConsensusStore
from agentsensus.io.compact import compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl

EMBED = embedders.HashEmbedder(32)
GHOST = "The ghost walks on the platform at midnight"


def _lg(path: str) -> ConsensusStore:
    return ConsensusStore(path, index={"embed": EMBED, "fields": ["text"]})


def _fill(lg: ConsensusStore) -> None:
    lg.put(("mem", "hamlet"), "ghost", {"text": GHOST, "n": 1})
    lg.put(("mem", "horatio"), "ghost", {"text": GHOST, "n": 2})  # shares the record
    lg.put(("mem", "hamlet"), "plain", {"text": "Polonius hides behind the arras"}, index=False)
    lg.put(("mem", "hamlet", "deep"), "k\x00with zero", {"text": "Ophelia sings of flowers"})


def _snapshot(lg: ConsensusStore) -> list[tuple[Any, ...]]:
    return [
        (it.namespace, it.key, it.value, it.created_at, it.updated_at)
        for it in lg.search(("mem",), limit=100)
        if it is not None
    ]


def test_items_survive_export_and_import(tmp_path: Any) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    with _lg(src) as lg:
        _fill(lg)
        before = _snapshot(lg)
        buf = io.StringIO()
        export_jsonl(lg.store, buf)
    lines = buf.getvalue().splitlines()
    items = [json.loads(x) for x in lines if json.loads(x)["type"] == "item"]
    assert len(items) == 4
    assert json.loads(lines[0])["embedder"] == "hash:32"
    import_jsonl(io.StringIO(buf.getvalue()), dst)
    with Store(dst) as s:
        assert s.verify() == []
        assert s.embedder_name == "hash:32"
    with _lg(dst) as lg:
        got = lg.get(("mem", "hamlet"), "ghost")
        assert got is not None and got.value == {"text": GHOST, "n": 1}
        assert _snapshot(lg) == before
        hits = lg.search(("mem",), query=GHOST, limit=2)
        assert {(h.namespace, h.key) for h in hits} == {(("mem", "hamlet"), "ghost"), (("mem", "horatio"), "ghost")}


def test_import_refuses_an_item_naming_a_record_its_owner_does_not_own(tmp_path: Any) -> None:
    src = os.fspath(tmp_path / "src")
    with _lg(src) as lg:
        _fill(lg)
        buf = io.StringIO()
        export_jsonl(lg.store, buf)
    rows = [json.loads(x) for x in buf.getvalue().splitlines()]
    for r in rows:
        if r["type"] == "item" and r["refs"]:
            r["refs"] = [["nobody", r["refs"][0][1]]]
            break
    text = "".join(json.dumps(r) + "\n" for r in rows)
    with pytest.raises(ValueError, match="does not own"):
        import_jsonl(io.StringIO(text), os.fspath(tmp_path / "dst"))
    assert not os.path.exists(tmp_path / "dst")


def test_compact_keeps_items(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with _lg(path) as lg:
        _fill(lg)
        for n in range(30):  # free pages for compact to drop
            lg.put(("mem", "junk"), f"k{n}", {"text": f"junk statement number {n} " * 20})
        for n in range(30):
            lg.delete(("mem", "junk"), f"k{n}")
        before = _snapshot(lg)
    compact(path)
    with _lg(path) as lg:
        assert _snapshot(lg) == before
        assert lg.store.verify() == []


def test_a_put_that_updates_an_item_keeps_its_created_at_and_refs_agree(tmp_path: Any) -> None:
    with _lg(os.fspath(tmp_path / "s")) as lg:
        lg.put(("a",), "k", {"text": "first words"})
        first = lg.get(("a",), "k")
        lg.put(("a",), "k", {"text": "second words entirely"})
        second = lg.get(("a",), "k")
        assert first is not None and second is not None
        assert second.created_at == first.created_at and second.updated_at >= first.updated_at
        row = lg.items.get(("a",), "k")
        assert row is not None and [lg.store.get(r).text for _, r in row.refs] == ["second words entirely"]
        assert lg.store.verify() == []


def test_a_namespace_and_key_too_long_are_refused_and_nothing_is_written(tmp_path: Any) -> None:
    with _lg(os.fspath(tmp_path / "s")) as lg:
        with pytest.raises(ValueError, match="at most"):
            lg.put(("a",), "k" * 600, {"text": "a text that would be deposited"})
        assert lg.store.stats().records == 0
        assert lg.search(("a",)) == []


def _damage_item_row(path: str) -> None:
    env = lmdb.open(path, max_dbs=64, subdir=True)
    try:
        db = env.open_db(b"lg_items", create=False)
        with env.begin(write=True, db=db) as txn:
            key, value = next(iter(txn.cursor()))
            # Claim 1000 refs where the row holds far fewer: it no longer decodes.
            txn.put(key, value[:16] + struct.pack("=I", 1000) + value[20:])
    finally:
        env.close()


def test_verify_reports_a_damaged_item_row_and_repair_drops_it(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with _lg(path) as lg:
        lg.put(("a",), "k", {"text": GHOST})
    _damage_item_row(path)
    with Store(path) as s:
        problems = s.verify()
        assert any("item a k is damaged" in p for p in problems), problems
        s.repair()
        assert s.verify() == []


def test_verify_reports_an_item_index_entry_without_its_row(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with _lg(path) as lg:
        lg.put(("a",), "k", {"text": GHOST})
    env = lmdb.open(path, max_dbs=64, subdir=True)
    with env.begin(write=True, db=env.open_db(b"lg_items", create=False)) as txn:
        txn.delete(next(iter(txn.cursor()))[0])
    env.close()
    with Store(path) as s:
        assert any("item index entry" in p for p in s.verify())


def _old_sqlite(path: str, rows: list[tuple[str, str, dict[str, Any]]], texts: list[tuple[str, str, str, int]]) -> None:
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE items (ns TEXT, key TEXT, value TEXT, created_at TEXT, updated_at TEXT, PRIMARY KEY (ns, key));"
        "CREATE TABLE texts (ns TEXT, key TEXT, path TEXT, owner TEXT, record INTEGER, PRIMARY KEY (ns, key, path));"
    )
    stamp = "2025-01-02T03:04:05.123456+00:00"
    db.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?)", [(n, k, json.dumps(v), stamp, stamp) for n, k, v in rows]
    )
    db.executemany("INSERT INTO texts VALUES (?, ?, ?, ?, ?)", texts)
    db.commit()
    db.close()


def test_an_earlier_versions_sqlite_items_are_moved_in_on_a_writable_open(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, embed=EMBED) as s:
        (rid,) = s.deposit("mem.hamlet", [GHOST]).ids
    old = os.path.join(path, "langgraph.sqlite3")
    _old_sqlite(
        old,
        [("mem.hamlet", "ghost", {"text": GHOST}), ("mem.hamlet", "gone", {"text": "x"})],
        [("mem.hamlet", "ghost", "text", "mem.hamlet", rid), ("mem.hamlet", "gone", "text", "mem.hamlet", rid + 7)],
    )
    with Store(path, readonly=True) as ro, pytest.raises(ValueError, match="open the store writable once"):
        ConsensusStore(ro, index={"embed": EMBED, "fields": ["text"]})
    with _lg(path) as lg:
        got = lg.get(("mem", "hamlet"), "ghost")
        assert got is not None and got.value == {"text": GHOST}
        assert got.created_at.isoformat() == "2025-01-02T03:04:05.123456+00:00"
        (hit,) = lg.search(("mem",), query=GHOST, limit=1)
        assert hit.key == "ghost"
        gone = lg.items.get(("mem", "hamlet"), "gone")
        assert gone is not None and gone.refs == ()  # its record was never there: the item stays, unindexed
        assert lg.store.verify() == []
    assert not os.path.exists(old) and os.path.exists(old + ".migrated")


def test_check_names_an_earlier_versions_item_file_until_it_is_moved(tmp_path: Any, capsys: Any) -> None:
    from agentsensus.cli import main

    path = os.fspath(tmp_path / "s")
    Store(path, embed=EMBED).close()
    _old_sqlite(os.path.join(path, "langgraph.sqlite3"), [("a", "k", {"text": "x"})], [])
    assert main(["check", path]) == 1
    assert "open it once with ConsensusStore" in capsys.readouterr().out
    _lg(path).close()
    assert main(["check", path]) == 0


def _as_schema_2(path: str) -> None:
    """The store as an earlier version left it: no item or settings tables."""
    env = lmdb.open(path, max_dbs=64, subdir=True)
    with env.begin(write=True) as txn:
        for name in (b"lg_items", b"lg_item_refs", b"settings"):
            txn.drop(env.open_db(name, txn=txn, create=False), delete=True)
        txn.put(b"schema", struct.pack("=I", 2), db=env.open_db(b"meta", txn=txn, create=False))
    env.close()


def test_a_store_from_before_the_item_tables_opens_and_gains_them(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=32) as s:
        s.deposit("a", ["words before items"], EMBED(["words before items"]))
    _as_schema_2(path)
    with Store(path, readonly=True) as s:  # read-only: no items, no settings, sound
        assert s.verify() == [] and s.embedder_name is None
        with ConsensusStore(s) as lg:
            assert lg.get(("a",), "k") is None and lg.search(("a",)) == []
    with _lg(path) as lg:  # writable: the tables are created
        lg.put(("a",), "k", {"text": GHOST})
        got = lg.get(("a",), "k")
        assert got is not None and got.value == {"text": GHOST}
        assert lg.store.verify() == []
