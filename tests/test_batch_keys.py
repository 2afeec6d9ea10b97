"""Exactly-once batches: deposit_many(batch_key=...) records its key in the
batch's own transaction, so a retried batch (after a reopen, a crash, in
another process) deposits nothing, asks no judge and returns the first
result; the key table is verified (I13), repaired, exported, imported and
compacted with the store."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import textwrap
from typing import Any

import lmdb
import numpy as np
import pytest
from agentsensus import Store, compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, RecordingJudge, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def items(seeds: list[tuple[str, list[int]]]) -> list[tuple[str, list[str], np.ndarray]]:
    return [(o, [f"fact {i}" for i in ss], np.stack([unit(i) for i in ss])) for o, ss in seeds]


ROUND = [("alice", [1, 2]), ("bob", [1]), ("carol", [3])]


@pytest.mark.slow
def test_a_retried_batch_is_a_no_op_returning_the_first_result(tmp_path) -> None:
    judge = RecordingJudge(lambda a, b: a == b)
    with Store(os.fspath(tmp_path / "s"), dim=DIM, judge=judge) as s:
        first = s.deposit_many(items(ROUND), round=1, batch_key="run-1/round-1")
        calls, before = len(judge.calls), s.stats()
        again = s.deposit_many(items(ROUND), round=1, batch_key="run-1/round-1")
        assert again == first and s.stats() == before and len(judge.calls) == calls
        assert first[1].merged == [True]  # bob's "fact 1" merged into alice's
        other = s.deposit_many(items(ROUND), round=1, batch_key="run-1/round-2")  # a new key deposits
        assert s.stats().deposits == before.deposits + 3 and all(all(d.merged) for d in other)


@pytest.mark.slow
def test_a_batch_committed_before_a_crash_is_not_deposited_again(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    # The writer commits the batch and dies without closing (os._exit: no cleanup at all).
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from agentsensus import Store
        from test_batch_keys import items, ROUND
        s = Store({path!r}, dim={DIM})
        print([d.ids for d in s.deposit_many(items(ROUND), round=4, batch_key="r4")], flush=True)
        os._exit(9)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 9, r.stderr
    with Store(path) as s:
        before = s.stats()
        again = s.deposit_many(items(ROUND), round=4, batch_key="r4")
        assert str([d.ids for d in again]) == r.stdout.strip() and s.stats() == before
        assert before.deposits == 3 and s.verify() == []


def test_a_key_reused_for_another_batch_is_refused_with_nothing_written(tmp_path) -> None:
    with Store(os.fspath(tmp_path / "s"), dim=DIM) as s:
        s.deposit_many(items(ROUND), round=1, batch_key="k")
        before = s.stats()
        for changed in (items(ROUND[:2]), items([("alice", [1, 2]), ("bob", [1]), ("dave", [3])])):
            with pytest.raises(ValueError, match=r"^batch_key 'k' was already used for a different batch"):
                s.deposit_many(changed, round=1, batch_key="k")
        with pytest.raises(ValueError, match="different batch"):
            s.deposit_many(items(ROUND), round=2, batch_key="k")
        assert s.stats() == before


@pytest.mark.parametrize(
    "key, error, message",
    [
        ("", ValueError, "batch_key must be a non-empty str"),
        ("   ", ValueError, "batch_key must be a non-empty str"),
        ("x" * 257, ValueError, "batch_key is 257 bytes in UTF-8; the limit is 256"),
        (b"raw", TypeError, "batch_key must be a str, got bytes"),
        (7, TypeError, "batch_key must be a str, got int"),
    ],
)
def test_a_bad_batch_key_is_one_line_and_writes_nothing(tmp_path, key: Any, error: type, message: str) -> None:
    with Store(os.fspath(tmp_path / "s"), dim=DIM) as s:
        with pytest.raises(error, match=message) as e:
            s.deposit_many(items(ROUND), batch_key=key)
        assert "\n" not in str(e.value) and s.stats().deposits == 0


def test_adeposit_many_takes_a_batch_key(tmp_path) -> None:
    import asyncio

    with Store(os.fspath(tmp_path / "s"), dim=DIM) as s:
        first = asyncio.run(s.adeposit_many(items(ROUND), batch_key="a"))
        before = s.stats()
        assert asyncio.run(s.adeposit_many(items(ROUND), batch_key="a")) == first and s.stats() == before
        assert s.deposit_many(items(ROUND), batch_key="a") == first  # one key space for both


def _keyed_store(path: str) -> list[Any]:
    with Store(path, dim=DIM) as s:
        results = [s.deposit_many(items(ROUND), round=r, batch_key=f"round {r}") for r in range(3)]
        s.forget("carol", results[0][2].ids[0])  # a key may name a record forgotten since
    return results


def test_keys_survive_export_import_and_compact(tmp_path) -> None:
    path, copy = os.fspath(tmp_path / "s"), os.fspath(tmp_path / "copy")
    results = _keyed_store(path)
    compact(path)
    buf = io.StringIO()
    with Store(path) as s:
        assert s.verify() == []
        assert s.deposit_many(items(ROUND), round=2, batch_key="round 2") == results[2]
        export_jsonl(s, buf)
    assert sum('"type": "batch"' in line for line in buf.getvalue().splitlines()) == 3
    import_jsonl(io.StringIO(buf.getvalue()), copy)
    with Store(copy) as c:
        before = c.stats()
        for r in range(3):
            assert c.deposit_many(items(ROUND), round=r, batch_key=f"round {r}") == results[r]
        assert c.stats() == before and c.verify() == []
        out = io.StringIO()
        export_jsonl(c, out)
    assert out.getvalue().splitlines()[1:] == buf.getvalue().splitlines()[1:]


def _damage(path: str, key: bytes, value: bytes) -> None:
    env = lmdb.open(path, max_dbs=64, subdir=True, lock=True)
    with env.begin(write=True) as t:
        t.put(key, value, db=env.open_db(b"batch_keys", txn=t))
    env.close()


def test_verify_reports_damaged_rows_and_repair_drops_them(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    results = _keyed_store(path)
    _damage(path, b"short", b"\x00" * 5)
    _damage(path, b"far", b"\x01" * 16 + struct.pack("=II", 1, 1) + struct.pack("=QB", 10**6, 0))
    with Store(path) as s:
        problems = s.verify()
        assert any("the result of batch key 'short' is damaged" in p for p in problems)
        assert any("batch key 'far' names record 1000000, beyond the id counter" in p for p in problems)
        s.repair()
        assert s.verify() == []
        assert s.deposit_many(items(ROUND), round=1, batch_key="round 1") == results[1]  # sound rows kept


def test_a_schema_2_store_opens_and_gains_the_table(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=DIM) as s:
        s.deposit_many(items(ROUND))
    env = lmdb.open(path, max_dbs=64, subdir=True, lock=True)
    with env.begin(write=True) as t:  # as a schema-2 build left it
        t.drop(env.open_db(b"batch_keys", txn=t), delete=True)
        t.put(b"schema", struct.pack("=I", 2), db=env.open_db(b"meta", txn=t))
    env.close()
    with Store(path, readonly=True) as s:
        assert s.stats().deposits == 3 and s.verify() == []
    with Store(path) as s:
        first = s.deposit_many(items(ROUND), batch_key="new")
        assert s.deposit_many(items(ROUND), batch_key="new") == first and s.verify() == []


@st.composite
def keyed_rounds(draw: Any) -> list[tuple[str, list[tuple[str, list[int]]]]]:
    """Batches under keys drawn from a small set (so some keys repeat)."""
    batch = st.lists(
        st.tuples(st.sampled_from("abc"), st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)),
        min_size=1,
        max_size=3,
    )
    return draw(st.lists(st.tuples(st.sampled_from(["k0", "k1", "k2", "k3"]), batch), min_size=1, max_size=6))


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=keyed_rounds())
def test_each_key_deposits_once_whatever_the_retries(tmp_path_factory, plan) -> None:
    base = tmp_path_factory.mktemp("bk")
    with Store(os.fspath(base / "keyed"), dim=DIM) as keyed, Store(os.fspath(base / "once"), dim=DIM) as once:
        first: dict[str, tuple[Any, Any]] = {}
        for key, batch in plan:
            if key in first and first[key][0] != batch:
                with pytest.raises(ValueError, match="different batch"):
                    keyed.deposit_many(items(batch), batch_key=key)
                continue
            got = keyed.deposit_many(items(batch), batch_key=key)
            if key not in first:
                first[key] = (batch, once.deposit_many(items(batch)))  # the peer: each batch once, no key
            assert got == first[key][1]
        assert keyed.stats() == once.stats() and keyed.verify() == []
