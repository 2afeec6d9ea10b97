"""Every hostile input is one line: nesting depth, integer width and float
range are checked in Python before the engine sees them, in ``where=``
filters, metadata and import lines, and owner names are NFC with no
invisible, bidi-control or other format character."""

from __future__ import annotations

import io
import json
import os
from typing import Any, Callable

import pytest
from agentsensus import Store
from agentsensus._store.validation import MAX_NESTING
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, snapshot, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def nested(depth: int, leaf: Any = 1) -> Any:
    v: Any = leaf
    for _ in range(depth):
        v = {"k": v}
    return v


def deep_and(depth: int) -> dict[str, Any]:
    w: dict[str, Any] = {"round": 0}
    for _ in range(depth):
        w = {"$and": [w]}
    return w


def one_line(e: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(e.value)
    assert msg and "\n" not in msg
    return msg


# ------------------------------------------------------------------ where=

WHERES = [
    (deep_and(10_000), ValueError, "where is nested deeper than 32 levels"),
    ({"round": {"$lt": 10**400}}, ValueError, "outside int64"),
    ({"topic": {"$in": [1, 2**64]}}, ValueError, "outside int64"),
    ({"topic": float("inf")}, ValueError, "NaN or inf"),
    ({"created_at": {"$gt": 10**30}}, ValueError, "outside int64"),
    ({"topic": object()}, TypeError, "not JSON-serializable"),
]


@pytest.mark.parametrize("where, error, message", WHERES)
def test_a_hostile_where_is_one_line(store: Store, where: Any, error: type, message: str) -> None:
    store.deposit("alice", ["a statement"], unit(1)[None], metadata={"topic": 1})
    with pytest.raises(error, match=message) as e:
        store.recall("alice", unit(1), where=where)
    assert "where" in one_line(e)


def test_a_where_at_the_depth_limit_still_works(store: Store) -> None:
    store.deposit("alice", ["a statement"], unit(1)[None])
    # {"$and": [ ... ]} is two levels; the clause dict at the bottom one more.
    assert [m.text for m in store.recall("alice", unit(1), where=deep_and((MAX_NESTING - 1) // 2))] == ["a statement"]


# ------------------------------------------------------------------ metadata

METADATA = [
    (nested(10_000), ValueError, "nested deeper than 32 levels"),
    ({"n": 10**400}, ValueError, "outside int64"),
    ({"n": 2**63}, ValueError, "outside int64"),
    ({"n": [1.5, float("nan")]}, ValueError, "NaN or inf"),
    ({"n": {"m": b"bytes"}}, TypeError, "not JSON-serializable"),
]


@pytest.mark.parametrize("metadata, error, message", METADATA)
def test_hostile_metadata_is_one_line_and_writes_nothing(
    store: Store, metadata: Any, error: type, message: str
) -> None:
    store.deposit("alice", ["existing"], unit(5)[None])
    before = snapshot(store)
    with pytest.raises(error, match=message) as e:
        store.deposit("alice", ["a statement"], unit(1)[None], metadata=metadata)
    assert "metadata" in one_line(e)
    assert snapshot(store) == before


def test_metadata_within_the_limits_is_kept(store: Store) -> None:
    md = {"deep": nested(MAX_NESTING - 2, -(2**63)), "big": 2**63 - 1}
    rid = store.deposit("alice", ["a statement"], unit(1)[None], metadata=md).ids[0]
    assert store.get(rid, "alice").metadata == md


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
        max_leaves=40,
    ),
    st.integers(min_value=0, max_value=3000),
)
def test_any_json_shape_is_accepted_or_refused_in_one_line(store: Store, value: Any, depth: int) -> None:
    """Any value at any depth, as metadata and as a where= value: kept, or a
    one-line ValueError/TypeError; never another exception."""
    shaped = {"v": nested(depth, value)}
    for call in (
        lambda: store.deposit("alice", ["a statement"], unit(1)[None], metadata=shaped),
        lambda: store.recall("alice", unit(1), where={"v": value} if depth % 2 else deep_and(depth)),
    ):
        try:
            call()
        except (ValueError, TypeError) as e:
            assert str(e) and "\n" not in str(e)


# ------------------------------------------------------------------ import


def export_lines(path: str) -> list[str]:
    with Store(path, dim=DIM, judge=None) as s:
        s.deposit("alice", ["the ghost walks"], unit(1)[None], metadata={"topic": "ghosts"})
        s.deposit("bob", ["tea at noon"], unit(2)[None])
        out = io.StringIO()
        export_jsonl(s, out)
    return out.getvalue().splitlines()


def record_line(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "record")


def set_field(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(row: dict[str, Any]) -> None:
        row[name] = value

    return apply


# Each damages the first record line (or, for raw text, replaces it).
IMPORTS: list[tuple[str, Any, str]] = [
    ("deep nesting", "[" * 100_000 + "]" * 100_000, "nested deeper than 32 levels"),
    ("deep object", json.dumps({"type": "record", "x": nested(40)}), "nested deeper than 32 levels"),
    ("a 5000-digit number", '{"type": "record", "id": ' + "9" * 5000 + "}", "line 2: "),
    ("NaN", '{"type": "record", "id": NaN}', "not a JSON number"),
    ("Infinity", '{"type": "record", "id": 1, "x": -Infinity}', "not a JSON number"),
    ("id beyond uint64", set_field("id", 2**64), "outside int64"),
    ("id beyond int64", set_field("id", 2**63), "outside int64"),
    ("round beyond u32", set_field("round", 2**40), "'round' is 1099511627776, above the limit"),
    ("deposit beyond int64", set_field("deposit", 10**30), "outside int64"),
    ("created_at at int64's top", set_field("created_at", 2**63 - 1), "'created_at' is 9223372036854775807, above"),
    ("created_at negative", set_field("created_at", -1), "'created_at' is negative"),
    ("edge beyond int64", set_field("edges", [2**64]), "outside int64"),
    ("an owner with a zero-width space", set_field("owners", ["alice\u200b"]), "format character"),
    ("an owner with a bidi override", set_field("owners", ["\u202ealice"]), "format character"),
    ("a fullwidth owner", set_field("owners", ["\uff21lice"]), "compatibility characters"),
    ("a decomposed owner", set_field("owners", ["Jose\u0301"]), "not in Unicode NFC form"),
    ("a digest that is not hex", set_field("digests", ["zz"]), "not hex"),
    ("a short digest", set_field("digests", ["abcd"]), "holds 2 bytes, not 16"),
    ("said n beyond int64", set_field("said", [{"n": 2**70, "owner": "alice", "round": 0, "text": "x"}]), "int64"),
    ("metadata too deep", set_field("metadata", {"alice": nested(40)}), "nested deeper than 32 levels"),
    ("metadata huge int", set_field("metadata", {"alice": {"n": 10**30}}), "outside int64"),
]


@pytest.mark.parametrize("what, damage, message", IMPORTS, ids=[c[0] for c in IMPORTS])
def test_a_hostile_import_line_is_one_line_and_leaves_nothing(tmp_path, what: str, damage: Any, message: str) -> None:
    lines = export_lines(os.fspath(tmp_path / "src"))
    n = record_line(lines)
    if isinstance(damage, str):
        lines[n] = damage
    else:
        row = json.loads(lines[n])
        damage(row)
        lines[n] = json.dumps(row)
    dst = tmp_path / "dst"
    with pytest.raises(ValueError, match=message) as e:
        import_jsonl(iter(lines), dst)
    assert one_line(e).startswith(f"line {n + 1}: ") or one_line(e).startswith("lines ")
    assert not dst.exists() and sorted(os.listdir(tmp_path)) == ["src"]


def test_a_hostile_header_counter_is_one_line(tmp_path) -> None:
    lines = export_lines(os.fspath(tmp_path / "src"))
    head = json.loads(lines[0])
    head["counters"]["next_id"] = 2**64
    with pytest.raises(ValueError, match="^line 1: .*outside int64"):
        import_jsonl(iter([json.dumps(head), *lines[1:]]), tmp_path / "dst")


# ------------------------------------------------------------------ owner names

REFUSED_OWNERS = [
    ("alice\u200b", "format character \\(U\\+200B"),
    ("\u202ealice", "format character \\(U\\+202E"),
    ("ali\u2028ce", "line separator character"),
    ("ali\u2029ce", "paragraph separator character"),
    ("alice\ue000", "private-use character"),
    ("alice\u0378", "unassigned character"),
    ("\uff21lice", "compatibility characters .*'Alice'"),
]


@pytest.mark.parametrize("owner, message", REFUSED_OWNERS)
def test_an_owner_name_that_could_pass_for_another_is_refused(store: Store, owner: str, message: str) -> None:
    before = snapshot(store)
    with pytest.raises(ValueError, match=message) as e:
        store.deposit(owner, ["a statement"], unit(1)[None])
    assert one_line(e).startswith("owner has")
    assert snapshot(store) == before


def test_two_spellings_of_one_name_are_one_owner(store: Store) -> None:
    composed, decomposed = "Jos\u00e9", "Jose\u0301"
    rid = store.deposit(decomposed, ["a statement"], unit(1)[None]).ids[0]
    assert store.owned(composed) == [rid] and store.owned(decomposed) == [rid]
    assert store.get(rid).owners == frozenset({composed})
    assert [m.id for m in store.recall(composed, unit(1))] == [rid]
    store.forget(decomposed, rid)
    assert store.owned(composed) == []


def test_a_cyrillic_lookalike_stays_a_distinct_owner(store: Store) -> None:
    """NFC and NFKC keep other scripts' letters: "\u0430lice" (Cyrillic a) is
    another owner, as documented; no confusable check folds it."""
    a = store.deposit("alice", ["a statement"], unit(1)[None]).ids[0]
    b = store.deposit("\u0430lice", ["another statement"], unit(2)[None]).ids[0]
    assert store.owned("alice") == [a] and store.owned("\u0430lice") == [b]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
    max_leaves=20,
)
FIELDS = [("record", f) for f in ["id", "text", "owners", "round", "deposit", "edges", "digests", "said", "vector"]]
FIELDS += [("record", f) for f in ["scope", "created_at", "updated_at", "metadata"]]
FIELDS += [("store", f) for f in ["format", "dim", "metric", "counters", "agents", "stats", "embedder"]]


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FIELDS), JSON_VALUES, st.integers(min_value=0, max_value=60))
def test_any_value_in_any_field_of_an_import_line_is_imported_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, where: tuple[str, str], value: Any, depth: int
) -> None:
    """A record or store line whose field holds any JSON value at any depth:
    the import succeeds and verifies, or raises one ValueError line naming
    the line and leaves nothing; never another exception."""
    base = tmp_path_factory.mktemp("hostile")
    lines = export_lines(os.fspath(base / "src"))
    kind, field = where
    n = record_line(lines) if kind == "record" else 0
    row = json.loads(lines[n])
    row[field] = nested(depth, value) if depth % 3 == 0 else value
    lines[n] = json.dumps(row)
    dst = base / "dst"
    try:
        import_jsonl(iter(lines), dst)
    except ValueError as e:
        assert str(e).startswith(("line ", "lines ", "the imported store")) and "\n" not in str(e), str(e)
        assert not dst.exists()
    else:
        with Store(os.fspath(dst), create=False) as s:
            assert s.verify() == []
            list(s.records())


@pytest.mark.parametrize(
    "field, value, message",
    [("dim", 0, "line 1: dim must be a positive int"), ("metric", "manhattan", "line 1: metric must be one of")],
)
def test_a_store_line_the_engine_refuses_is_one_line(tmp_path, field: str, value: Any, message: str) -> None:
    """A header whose dim or metric the engine would refuse names line 1."""
    lines = export_lines(os.fspath(tmp_path / "src"))
    row = json.loads(lines[0])
    row[field] = value
    lines[0] = json.dumps(row)
    with pytest.raises(ValueError) as e:
        import_jsonl(iter(lines), tmp_path / "dst")
    assert one_line(e).startswith(message)
    assert not (tmp_path / "dst").exists()


ITEM = {"type": "item", "namespace": ["notes"], "key": "k", "value": {"a": 1}, "created_at": 1, "updated_at": 1}
BATCH = {"type": "batch", "key": "b1", "digest": "00" * 16, "ids": [[1]], "merged": [[False]]}


@pytest.mark.parametrize(
    "line, message",
    [
        ({**ITEM, "created_at": 2**63 - 1}, "'created_at' must be microseconds since the epoch"),
        ({**ITEM, "updated_at": 2**64}, "outside int64"),
        ({**ITEM, "refs": [["alice", 2**64]]}, "outside int64"),
        ({**ITEM, "namespace": nested(40, "x")}, "nested deeper than 32 levels"),
        ({**BATCH, "ids": [[2**64]]}, "outside int64"),
        ({**BATCH, "merged": nested(40, False)}, "nested deeper than 32 levels"),
    ],
)
def test_a_hostile_item_or_batch_line_is_one_line(tmp_path, line: dict[str, Any], message: str) -> None:
    lines = export_lines(os.fspath(tmp_path / "src"))
    with pytest.raises(ValueError, match=message) as e:
        import_jsonl(iter([*lines, json.dumps(line)]), tmp_path / "dst")
    assert one_line(e).startswith(f"line {len(lines) + 1}: ")
    assert not (tmp_path / "dst").exists()


def test_an_item_value_keeps_the_depth_and_numbers_its_store_took(tmp_path) -> None:
    """An item's value is the caller's JSON: an export of a deep value or a
    wide integer imports as it was exported."""
    lines = export_lines(os.fspath(tmp_path / "src"))
    value = {"deep": nested(40, 10**30)}
    import_jsonl(iter([*lines, json.dumps({**ITEM, "value": value})]), tmp_path / "dst")
    with Store(os.fspath(tmp_path / "dst"), create=False) as s:
        assert s.verify() == []
        out = io.StringIO()
        export_jsonl(s, out)
    items = [json.loads(line) for line in out.getvalue().splitlines() if json.loads(line)["type"] == "item"]
    assert [i["value"] for i in items] == [value]
