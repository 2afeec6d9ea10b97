"""Bad input gets a clear error that names the argument, and nothing is written."""

from __future__ import annotations

import numpy as np
import pytest

from agentsensus import Store

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
    ("a", ["x", "y"], np.stack([unit(1), np.full(DIM, np.inf, np.float32)]), 0, ValueError, r"vectors\[1\] has NaN or inf"),
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
]


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
