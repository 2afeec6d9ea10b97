"""Bad input gets a clear error that names the argument, and nothing is written."""

from __future__ import annotations

import numpy as np
import pytest
from agentsensus import Store
from agentsensus._core import CommitPlan
from agentsensus._store import validation
from helpers import DIM, snapshot, unit

OK = unit(1)[None]


def bad(v):
    a = np.array(v, dtype=np.float32)
    return a


CASES = [
    # (owner, statements, vectors, round, error, message)
    ("a", ["x"], np.zeros((1, DIM + 1), np.float32) + 1, 0, ValueError, r"vectors must have shape \(1, 16\)"),
    ("a", ["x", "y"], OK, 0, ValueError, r"shape \(2, 16\)"),
    ("a", ["x"], np.ones((1, DIM), np.int64), 0, TypeError, "floats"),
    ("a", ["x"], np.array([["a"] * DIM]), 0, TypeError, "floats"),
    ("a", ["x"], np.full((1, DIM), np.nan, np.float32), 0, ValueError, "NaN or inf"),
    (
        "a",
        ["x", "y"],
        np.stack([unit(1), np.full(DIM, np.inf, np.float32)]),
        0,
        ValueError,
        r"vectors\[1\] has NaN or inf",
    ),
    ("a", ["x"], np.zeros((1, DIM), np.float32), 0, ValueError, "zero norm"),
    ("a", [""], OK, 0, ValueError, r"statements\[0\] is empty"),
    ("a", ["  \t\n"], OK, 0, ValueError, "only whitespace"),
    ("a", [], np.zeros((0, DIM), np.float32), 0, ValueError, "statements is empty"),
    ("a", "a string", OK, 0, TypeError, "sequence of str"),
    ("a", [b"bytes"], OK, 0, TypeError, r"statements\[0\] must be a str"),
    ("a", ["x" * (64 * 1024 + 1)], OK, 0, ValueError, "limit is 65536"),
    ("a", ["\ud800 lone surrogate"], OK, 0, ValueError, "not valid Unicode"),
    (42, ["x"], OK, 0, TypeError, "owner must be a str"),
    ("", ["x"], OK, 0, ValueError, "owner must be a non-empty"),
    ("   ", ["x"], OK, 0, ValueError, "owner must be a non-empty"),
    ("o" * 256, ["x"], OK, 0, ValueError, "owner is 256 bytes"),
    ("a", ["x"], OK, -1, ValueError, "round must be between"),
    ("a", ["x"], OK, 1.5, TypeError, "round must be an int"),
    ("a", ["x"], OK, True, TypeError, "round must be an int"),
    ("a", ["x"], None, 0, ValueError, "no embed function"),
    ("\x00", ["x"], OK, 0, ValueError, r"owner has a control character \(U\+0000 at index 0\)"),
    ("ali\x00ce", ["x"], OK, 0, ValueError, r"owner has a control character \(U\+0000 at index 3\)"),
    ("bob\n", ["x"], OK, 0, ValueError, "owner has a control character"),
    ("\x85bob", ["x"], OK, 0, ValueError, r"owner has a control character \(U\+0085"),
    ("\u200b", ["x"], OK, 0, ValueError, "owner has no visible character"),
    ("\u200b\ufeff\u2060", ["x"], OK, 0, ValueError, "owner has no visible character"),
    ("a", ["\x00"], OK, 0, ValueError, r"statements\[0\] has no visible character"),
    ("a", ["\x00\x00 \u200b\u200d"], OK, 0, ValueError, r"statements\[0\] has no visible character"),
    ("a", ["\u3164\ufe0f\U000e0041"], OK, 0, ValueError, r"statements\[0\] has no visible character"),
]

VISIBLE = ["a", "\u00e9", "\u4e2d", "\U0001f600", "0", ".", "a\x00b", "\u200bx"]


@pytest.mark.parametrize("owner, statements, vectors, rnd, error, message", CASES)
def test_bad_deposit_is_refused_and_writes_nothing(store, owner, statements, vectors, rnd, error, message):
    store.deposit("a", ["existing"], unit(5)[None])
    before = snapshot(store)
    with pytest.raises(error, match=message):
        store.deposit(owner, statements, vectors, round=rnd)
    assert snapshot(store) == before
    with pytest.raises(error, match=message):
        store.deposit_many([("b", ["fine"], unit(6)[None]), (owner, statements, vectors)], round=rnd if rnd != 0 else 0)
    assert snapshot(store) == before


def test_too_many_statements(store):
    n = 1025
    with pytest.raises(ValueError, match="limit is 1024"):
        store.deposit("a", [f"s{i}" for i in range(n)], np.tile(unit(1), (n, 1)))
    assert store.stats().records == 0


def test_float64_and_lists_are_accepted(store):
    d = store.deposit("a", ["x"], [list(unit(1).astype(np.float64))])
    assert store.recall("a", list(unit(1)))[0].id == d.ids[0]


def test_bad_recall_arguments(store):
    store.deposit("a", ["x"], unit(1)[None])
    with pytest.raises(ValueError, match=r"query must have shape \(16,\)"):
        store.recall("a", np.ones(3, np.float32))
    with pytest.raises(ValueError, match="NaN"):
        store.recall("a", np.full(DIM, np.nan, np.float32))
    with pytest.raises(ValueError, match="zero norm"):
        store.recall("a", np.zeros(DIM, np.float32))
    with pytest.raises(ValueError, match="k must be at least 1"):
        store.recall("a", unit(1), k=0)
    with pytest.raises(TypeError, match="no embed"):
        store.recall("a", "a text query")
    with pytest.raises(TypeError, match="owner must be a str"):
        store.recall(None, unit(1))


def test_get_forget_errors(store):
    d = store.deposit("a", ["x"], unit(1)[None])
    with pytest.raises(KeyError):
        store.get(999)
    with pytest.raises(KeyError):
        store.neighbors(999)
    with pytest.raises(TypeError):
        store.get("1")
    before = snapshot(store)
    with pytest.raises(KeyError, match="not owned"):
        store.forget("b", d.ids[0])
    with pytest.raises(KeyError):
        store.forget("a", 999)
    assert snapshot(store) == before


def test_constructor_errors(store_path):
    with pytest.raises(ValueError, match="dim must be a positive int"):
        Store(store_path, dim=0)
    with pytest.raises(ValueError, match="candidates"):
        Store(store_path, dim=DIM, candidates=-1)
    with pytest.raises(TypeError, match="judge must be a callable"):
        Store(store_path, dim=DIM, judge="gpt")
    with pytest.raises(ValueError, match="merge_policy"):
        Store(store_path, dim=DIM, merge_policy="longest")
    Store(store_path, dim=DIM).close()


@pytest.mark.parametrize("text", VISIBLE)
def test_text_with_one_visible_character_is_accepted(store, text):
    """The refusal is of texts that show nothing, not of odd characters."""
    d = store.deposit("a", [text], unit(9)[None])
    assert store.get(d.ids[0]).text == text


@pytest.mark.parametrize(
    "owner, statement, message",
    [
        ("\x00", "x", "owner has a control character"),
        ("\u200b", "x", "owner has no visible character"),
        ("a", "\x00", "statement has no visible character"),
        ("a", "\u200b\u200c", "statement has no visible character"),
    ],
)
def test_the_engine_refuses_the_same_without_python(store, owner, statement, message):
    """A direct engine commit (past the Python checks) is refused by the
    engine's own check (cpp/src/format/visible_text.hpp), with nothing written."""
    from agentsensus._store.normalize import text_digest

    engine = store._handles().engine
    before = snapshot(store)
    plan = [
        CommitPlan(
            owner=owner,
            round=0,
            texts=[statement],
            digests=text_digest(statement),
            vectors=unit(3)[None],
            targets=[0],
            expected=[None],
            kept=[None],
        )
    ]
    with pytest.raises(ValueError, match=message):
        engine.commit(plan, 0, 0.75)
    assert snapshot(store) == before


def test_the_engine_and_python_share_one_table_of_invisible_characters():
    import sys

    from agentsensus import _core
    from agentsensus._store.validation import _invisible

    ranges = [tuple(r) for r in _core.INVISIBLE_RANGES]
    assert (0, 0x20) in ranges and any(lo <= 0x200B <= hi for lo, hi in ranges)
    for cp in range(0, sys.maxunicode + 1, 7):
        assert _invisible(chr(cp)) == any(lo <= cp <= hi for lo, hi in ranges)


def test_a_read_owner_name_is_checked_once_and_stays_checked(store):
    # check_owner(existing=True) keeps the names it has read back: the
    # second read of a name gives the same NFC form from the table, and a
    # bad name is never kept, so it is refused every time.
    decomposed, composed = "Cafe\u0301-reader", "Caf\u00e9-reader"
    store.deposit(composed, ["x"], unit(1)[None])
    for _ in range(2):
        assert [m.owners for m in store.recall(decomposed, unit(1), k=1)] == [frozenset({composed})]
        assert validation._known_owners[decomposed] == composed
    for bad in ("", "o" * 256):
        for _ in range(2):
            with pytest.raises(ValueError):
                store.recall(bad, unit(1))
        assert bad not in validation._known_owners
