"""Per-(record, owner) metadata, record times, filtered recall with
``where`` and ``threshold``, update, history, delete_all and reset, against
a real store on disk; verify, repair, export/import and compact carry the
new tables (times, metadata)."""

from __future__ import annotations

import datetime
import io
import struct

import lmdb
import numpy as np
import pytest
from agentsensus import Store, compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, unit


def same_text(reqs):  # merges a statement into a candidate with the same text
    return [next((c.id for c in r.candidates if c.text == r.statement), None) for r in reqs]


@pytest.fixture
def store(tmp_path):
    with Store(str(tmp_path / "s"), dim=DIM, judge=same_text, min_similarity=0.0) as s:
        yield s


def test_each_owner_keeps_its_own_metadata_of_a_merged_record(store) -> None:
    v = unit(1)
    rid = store.deposit("a", ["the bridge is closed"], [v], metadata={"src": "radio", "n": 1}).ids[0]
    got = store.deposit("b", ["the bridge is closed"], [v], metadata={"src": "eye"})
    assert got.ids == [rid] and got.merged == [True]
    assert store.get(rid, owner="a").metadata == {"src": "radio", "n": 1}
    assert store.get(rid, owner="b").metadata == {"src": "eye"}
    assert store.get(rid).metadata is None
    # a's forget takes a's metadata with it; b's stays
    store.forget("a", rid)
    assert store.get(rid, owner="b").metadata == {"src": "eye"}
    assert store.get(rid, owner="a").metadata is None
    assert store.verify() == []


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1, 2], "a list of 2, but the deposit has 1"),
        ("x", "must be a dict"),
        ({1: "x"}, "keys must be str"),
        ({"x": float("nan")}, "without NaN"),
        ({"x": object()}, "JSON-serializable"),
        ({"x": "y" * 20000}, "more than the limit"),
    ],
)
def test_bad_metadata_is_refused_in_one_line_and_nothing_is_written(store, bad, message) -> None:
    before = store.stats()
    with pytest.raises((TypeError, ValueError), match=message) as e:
        store.deposit("a", ["one"], [unit(2)], metadata=bad)
    assert "\n" not in str(e.value)
    assert store.stats() == before


def test_times_are_set_at_creation_and_move_on_merge_and_update(store) -> None:
    t0 = datetime.datetime.now(datetime.timezone.utc)
    rid = store.deposit("a", ["fog at dawn"], [unit(3)]).ids[0]
    m = store.get(rid)
    assert m.created_at is not None and m.created_at == m.updated_at
    assert m.created_at >= t0 - datetime.timedelta(seconds=1)
    store.deposit("b", ["fog at dawn"], [unit(3)])
    m2 = store.get(rid)
    assert m2.created_at == m.created_at and m2.updated_at >= m.updated_at
    store.forget("b", rid)
    store.update(rid, "fog at dusk", owner="a", vector=unit(4))
    m3 = store.get(rid)
    assert m3.text == "fog at dusk" and m3.created_at == m.created_at and m3.updated_at >= m2.updated_at


def _world(s: Store) -> list[int]:
    ids = []
    for i in range(30):
        meta = {"topic": ["war", "peace", "trade"][i % 3], "weight": i, "seen": i % 2 == 0}
        ids += s.deposit("a", [f"event {i}"], [unit(100 + i)], round=i, metadata=meta).ids
    s.deposit("b", ["event by b"], [unit(999)], metadata={"topic": "war"})
    return ids


def _brute(s: Store, q: np.ndarray, k: int, keep) -> list[int]:
    rows = [(float(np.dot(q, unit(100 + i))), i) for i in range(30)]
    ids = s.owned("a")
    kept = [(score, ids[i]) for score, i in rows if keep(i)]
    kept.sort(key=lambda t: (-t[0], t[1]))
    return [rid for _, rid in kept[:k]]


@pytest.mark.parametrize("exact_cutoff", [4096, 0])  # the owner scan, and the graph search with its keep-test
def test_where_filters_are_exact(tmp_path, exact_cutoff) -> None:
    with Store(str(tmp_path / "s"), dim=DIM, exact_cutoff=exact_cutoff) as s:
        _world(s)
        q = unit(7)
        cases = [
            ({"topic": "war"}, lambda i: i % 3 == 0),
            ({"topic": {"$in": ["peace", "trade"]}}, lambda i: i % 3 != 0),
            ({"weight": {"$gte": 10, "$lte": 19}}, lambda i: 10 <= i <= 19),
            ({"weight": {"$gt": 10, "$lt": 19}}, lambda i: 10 < i < 19),
            ({"seen": True, "round": {"$lte": 5}}, lambda i: i % 2 == 0 and i <= 5),
            ({"$and": [{"topic": "war"}, {"weight": {"$gte": 20}}]}, lambda i: i % 3 == 0 and i >= 20),
            ({"missing": 1}, lambda i: False),
            ({"metadata.topic": "trade"}, lambda i: i % 3 == 2),
        ]
        for where, keep in cases:
            got = [m.id for m in s.recall("a", q, k=4, expand=False, where=where)]
            assert got == _brute(s, q, 4, keep), where
            assert all(m.metadata is not None for m in s.recall("a", q, k=4, expand=False, where=where))


def test_where_on_times_and_threshold(store) -> None:
    _world(store)
    q = unit(100)  # event 0's own vector: score 1
    future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
    assert store.recall("a", q, k=5, where={"created_at": {"$gte": future}}) == []
    assert len(store.recall("a", q, k=5, expand=False, where={"updated_at": {"$lte": future}})) == 5
    top = store.recall("a", q, k=5, expand=False, threshold=0.99)
    assert [m.text for m in top] == ["event 0"]
    with pytest.raises(ValueError, match="timezone-aware"):
        store.recall("a", q, where={"created_at": {"$gte": datetime.datetime(2020, 1, 1)}})
    with pytest.raises(ValueError, match="operators are"):
        store.recall("a", q, where={"topic": {"$regex": "w"}})
    with pytest.raises(ValueError, match="not supported"):
        store.recall("a", q, where={"$or": [{"topic": "war"}]})
    with pytest.raises(TypeError, match="threshold must be a number"):
        store.recall("a", q, threshold="high")


def test_expansion_rows_pass_the_filter_too(store) -> None:
    ids = store.deposit("a", ["x one", "x two"], [unit(1), unit(2)], metadata=[{"keep": 1}, {"keep": 0}]).ids
    plain = {m.id for m in store.recall("a", unit(1), k=1)}
    assert plain == set(ids)  # the edge brings the other
    assert [m.id for m in store.recall("a", unit(1), k=1, where={"keep": 1})] == [ids[0]]


def test_update_history_delete_all_and_reset(store) -> None:
    rid = store.deposit("a", ["likes tea"], [unit(1)], metadata={"k": 1}).ids[0]
    assert store.update(rid, "likes coffee", owner="a", vector=unit(2), metadata={"k": 2}) == rid
    m = store.get(rid, owner="a")
    assert (m.text, m.metadata) == ("likes coffee", {"k": 2})
    assert [m.id for m in store.recall("a", unit(2), k=1, expand=False)] == [rid]  # the new vector is indexed
    events = [(c.event, c.old, c.new, c.owner) for c in store.history(rid)]
    assert events == [("ADD", None, "likes tea", "a"), ("UPDATE", "likes tea", "likes coffee", "a")]
    # a shared record: the update is the owner's own deposit, the others keep theirs
    shared = store.deposit("b", ["the sky is grey"], [unit(5)]).ids[0]
    store.deposit("a", ["the sky is grey"], [unit(5)])
    new = store.update(shared, "the sky is blue", owner="a", vector=unit(6))
    assert new != shared and store.get(shared).owners == {"b"} and store.get(new).owners == {"a"}
    with pytest.raises(KeyError):
        store.update(shared, "nope", owner="a", vector=unit(7))
    assert store.delete_all("a") == 2
    assert store.owned("a") == [] and store.owned("b") == [shared]
    assert store.verify() == []
    seen: list[tuple[int, int]] = []
    assert store.reset(progress=lambda done, total: seen.append((done, total))) == 1
    assert seen == [(1, 1)]
    assert store.stats().records == 0 and store.verify() == []


def test_export_import_and_compact_carry_times_and_metadata(tmp_path) -> None:
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    with Store(src, dim=DIM, judge=same_text, min_similarity=0.0) as s:
        rid = s.deposit("a", ["storm"], [unit(1)], metadata={"w": "rain"}).ids[0]
        s.deposit("b", ["storm"], [unit(1)], metadata={"w": "wind"})
        want = (s.get(rid, owner="a"), s.get(rid, owner="b"))
        out = io.StringIO()
        export_jsonl(s, out)
    import_jsonl(io.StringIO(out.getvalue()), dst)
    for path in (dst, src):
        if path == src:
            compact(src)
        with Store(path) as s:
            assert (s.get(rid, owner="a"), s.get(rid, owner="b")) == want
            assert s.get(rid, owner="a").metadata == {"w": "rain"}
            assert s.verify() == []


def test_an_import_naming_metadata_of_a_non_owner_is_refused(tmp_path) -> None:
    src = str(tmp_path / "src")
    with Store(src, dim=DIM) as s:
        s.deposit("a", ["storm"], [unit(1)], metadata={"w": "rain"})
        out = io.StringIO()
        export_jsonl(s, out)
    lines = out.getvalue().replace('"metadata": {"a"', '"metadata": {"z"').splitlines(keepends=True)
    with pytest.raises(ValueError, match="who does not own record 1"):
        import_jsonl(iter(lines), str(tmp_path / "dst"))


def _raw(path: str):
    return lmdb.open(path, max_dbs=64, subdir=True, lock=True)


def test_verify_reports_and_repair_drops_stray_rows(tmp_path) -> None:
    path = str(tmp_path / "s")
    with Store(path, dim=DIM) as s:
        rid = s.deposit("a", ["storm"], [unit(1)], metadata={"w": 1}).ids[0]
    env = _raw(path)
    with env.begin(write=True) as t:
        meta, times = env.open_db(b"metadata", txn=t), env.open_db(b"times", txn=t)
        t.put(struct.pack(">QI", rid, 99), b'{"x":1}', db=meta)  # an owner id that does not own it
        t.put(struct.pack(">Q", 77), struct.pack("=QQ", 1, 2), db=times)  # a missing record
        t.put(struct.pack(">QI", rid, 1), b"not json", db=meta)  # a's row, damaged
    env.close()
    with Store(path) as s:
        problems = s.verify()
        assert any("not an owner" in p for p in problems)
        assert any("names a missing record" in p for p in problems)
        assert any("not one JSON object" in p for p in problems)
        s.repair()
        assert s.verify() == []
        assert s.get(rid, owner="a").metadata is None and s.get(rid).created_at is not None


def test_a_schema_2_store_opens_and_gains_the_tables(tmp_path) -> None:
    path = str(tmp_path / "s")
    with Store(path, dim=DIM) as s:
        rid = s.deposit("a", ["old words"], [unit(1)]).ids[0]
    env = _raw(path)  # as an older build left it: no times, no metadata, schema 2
    with env.begin(write=True) as t:
        for name in (b"times", b"metadata"):
            t.drop(env.open_db(name, txn=t), delete=True)
        t.put(b"schema", struct.pack("=I", 2), db=env.open_db(b"meta", txn=t))
    env.close()
    with Store(path, readonly=True) as s:
        assert s.get(rid).created_at is None and s.recall("a", unit(1), where={"x": 1}) == []
    with Store(path) as s:
        assert s.get(rid).created_at is None  # unknown, and said so
        s.deposit("a", ["old words"], [unit(1)], metadata={"x": 1})
        assert [m.id for m in s.recall("a", unit(1), where={"x": 1})] == [rid]
        assert s.verify() == []


@pytest.mark.slow
def test_the_graph_search_keeps_only_what_passes_and_falls_back_to_the_scan(tmp_path) -> None:
    # exact_cutoff=0 and a width of 1 make the owner's 700 records go through
    # the HNSW graph (a scan costs more than a search of 3 at width 1).
    with Store(str(tmp_path / "s"), dim=DIM, exact_cutoff=0, expansion_search=1, candidates=0, sync=False) as s:
        items = [("a", [f"r{i}"], unit(5000 + i)[None, :], {"b": i % 2, "i": i}) for i in range(700)]
        ids = [d.ids[0] for d in s.deposit_many(items)]
        for n in range(20):
            q = unit(9000 + n)
            for m in s.recall("a", q, k=3, expand=False, where={"b": 1}):
                assert m.metadata is not None and m.metadata["b"] == 1
            # one record passes: the graph's candidates rarely hold it, the scan always does
            assert [m.id for m in s.recall("a", q, k=1, expand=False, where={"i": 123})] == [ids[123]]
            assert s.recall("a", q, k=1, where={"i": -1}) == []
