"""The documented input limits (docs/reliability.md): each is enforced with a
ValueError that names it, and nothing is written."""

from __future__ import annotations

import numpy as np
import pytest
from agentsensus import Store, _core
from agentsensus._store.validation import (
    MAX_OWNER_BYTES,
    MAX_OWNERS_PER_RECORD,
    MAX_STATEMENT_BYTES,
    MAX_STATEMENTS_PER_DEPOSIT,
)
from agentsensus.planfence.fence import MAX_KEY_BYTES
from helpers import DIM, snapshot, unit


def test_the_limits_are_the_documented_ones():
    assert (MAX_STATEMENT_BYTES, MAX_STATEMENTS_PER_DEPOSIT, MAX_OWNER_BYTES) == (65536, 1024, 255)
    assert MAX_OWNERS_PER_RECORD == 4096
    assert MAX_KEY_BYTES == 511  # LMDB's key size limit


def test_statement_bytes_and_count(store):
    before = snapshot(store)
    with pytest.raises(ValueError, match="limit is 65536"):
        store.deposit("a", ["x" * (MAX_STATEMENT_BYTES + 1)], unit(1)[None])
    with pytest.raises(ValueError, match="limit is 1024"):
        n = MAX_STATEMENTS_PER_DEPOSIT + 1
        store.deposit("a", [f"s{i}" for i in range(n)], np.tile(unit(1), (n, 1)))
    with pytest.raises(ValueError, match="limit is 255"):
        store.deposit("a" * 256, ["fine"], unit(1)[None])
    assert snapshot(store) == before
    # multi-byte characters count in UTF-8 bytes
    with pytest.raises(ValueError, match="bytes in UTF-8"):
        store.deposit("a", ["é" * (MAX_STATEMENT_BYTES // 2 + 1)], unit(1)[None])
    assert store.deposit("a", ["x" * MAX_STATEMENT_BYTES], unit(1)[None]).ids


def test_owners_per_record(store_path, monkeypatch):
    # The engine enforces the limit inside the commit; reaching it through
    # the API would take 4096 deposits, so the Python pre-check is lowered
    # to show its message and then bypassed to show the engine's.
    import agentsensus._deposit.plan as plan

    with Store(store_path, dim=DIM) as s:
        rid = s.deposit("o0", ["popular fact"], unit(1)[None]).ids[0]
        s.deposit_many([(f"o{i}", ["popular fact"], unit(1)[None]) for i in range(1, 5)])
        monkeypatch.setattr(plan, "MAX_OWNERS_PER_RECORD", 5)
        with pytest.raises(ValueError, match="more than 5 owners"):
            s.deposit("o5", ["popular fact"], unit(1)[None])
        assert len(s.get(rid).owners) == 5
    assert _core.MAX_OWNERS_PER_RECORD == MAX_OWNERS_PER_RECORD


def test_owners_per_record_in_the_engine(store_path, monkeypatch):
    import agentsensus._deposit.plan as plan

    monkeypatch.setattr(plan, "MAX_OWNERS_PER_RECORD", 10**9)  # the engine alone
    with Store(store_path, dim=DIM) as s:
        n = MAX_OWNERS_PER_RECORD
        rid = s.deposit("o0", ["popular fact"], unit(1)[None]).ids[0]
        for start in range(1, n, 1000):
            s.deposit_many([(f"o{i}", ["popular fact"], unit(1)[None]) for i in range(start, min(start + 1000, n))])
        assert len(s.get(rid).owners) == n
        before = s.stats()
        with pytest.raises(ValueError, match=f"already has {n} owners"):
            s.deposit("one too many", ["popular fact"], unit(1)[None])
        assert s.stats() == before and s.owned("one too many") == []


def test_lineage_key_length(store):
    f = store.fence
    assert f.publish("k" * MAX_KEY_BYTES, "o", "v") == 1
    # Regression: a 512..1024-byte key used to reach LMDB and come back as
    # CorruptStoreError (MDB_BAD_VALSIZE) instead of a ValueError.
    with pytest.raises(ValueError, match="limit is 511"):
        f.publish("k" * (MAX_KEY_BYTES + 1), "o", "v")
    with pytest.raises(ValueError, match="limit is 511"):
        f.derive("plan", "o", "v", {"é" * 300: 1})
    assert f.keys() == ["k" * MAX_KEY_BYTES]
