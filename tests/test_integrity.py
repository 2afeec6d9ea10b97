"""Store.verify, Store.repair and `agentsensus check`: damage made with
py-lmdb on a closed store is reported in plain words and repaired."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import lmdb
import numpy as np
import pytest
from agentsensus import Store, judges
from helpers import DIM, near, unit

DUPINT = dict(dupsort=True, dupfixed=True, integerdup=True)


def build(path: str) -> None:
    with Store(path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5) as s:
        s.deposit("alice", ["the ghost walks", "night on the platform"], np.stack([unit(1), unit(2)]))
        s.deposit("bob", ["a ghost walks", "Bob is cold"], np.stack([near(unit(1), 3), unit(4)]))
        s.deposit("carol", ["THE GHOST WALKS"], unit(9)[None])


def damage(path: str, table: str, flags: dict, fn) -> None:
    env = lmdb.open(path, max_dbs=32, subdir=True)
    db = env.open_db(table.encode(), create=False, **flags)
    with env.begin(write=True, db=db) as txn:
        fn(txn)
    env.close()


def check(path: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agentsensus.cli", "check", path, *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_sound_store_verifies_clean(store_path):
    build(store_path)
    with Store(store_path) as s:
        assert s.verify() == []
    r = check(store_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok"


@pytest.mark.slow
def test_missing_owner_list_entry_is_reported_and_repaired(store_path):
    build(store_path)
    with Store(store_path) as s:
        rid = s.owned("bob")[0]
    # drop bob's side of the ownership pair only
    damage(store_path, "owned", DUPINT, lambda t: t.delete(struct.pack(">I", 2), struct.pack("=Q", rid)))
    with Store(store_path) as s:
        problems = s.verify()
    assert any("missing from that owner's list" in p and "'bob'" in p for p in problems), problems
    r = check(store_path, "--json")
    assert r.returncode == 1 and not json.loads(r.stdout)["sound"]
    r = check(store_path, "--repair")
    assert r.returncode == 0, r.stdout + r.stderr
    with Store(store_path) as s:
        assert s.verify() == []
        assert rid in s.owned("bob")
        assert any(m.id == rid for m in s.recall("bob", unit(1)))


def test_one_sided_edge_and_bad_counters(store_path):
    build(store_path)
    with Store(store_path) as s:
        a = s.owned("alice")
        before = s.stats()
    damage(store_path, "edges", DUPINT, lambda t: t.delete(struct.pack(">Q", a[1]), struct.pack("=Q", a[0])))
    damage(store_path, "hist", {}, lambda t: t.put(struct.pack(">I", 7), struct.pack("=Q", 1)))
    with Store(store_path) as s:
        problems = s.verify()
        assert any("has no reverse" in p for p in problems), problems
        assert any("histogram" in p for p in problems), problems
        s.repair()
        assert s.verify() == []
        assert a[0] in s.neighbors(a[1]) and a[1] in s.neighbors(a[0])
        assert s.stats() == before


def test_record_without_vector_is_dropped_by_repair(store_path):
    build(store_path)
    with Store(store_path) as s:
        victim = s.owned("carol")[0]  # shared by alice, bob and carol
        other = [i for i in s.owned("alice") if i != victim][0]
    damage(store_path, "vectors", {}, lambda t: t.delete(struct.pack(">Q", other)))
    with Store(store_path) as s:
        assert any(f"record {other} has no vector" in p for p in s.verify())
        s.repair()
        assert s.verify() == []
        with pytest.raises(KeyError):
            s.get(other)
        assert s.neighbors(victim) == sorted(set(s.neighbors(victim)) - {other})
        # the exact-duplicate index survives the rebuild
        assert s.deposit("dave", ["the ghost WALKS"], unit(30)[None]).ids == [victim]


def test_records_iterates_everything(store_path):
    build(store_path)
    with Store(store_path) as s:
        rows = list(s.records())
        assert [r.id for r in rows] == sorted(r.id for r in rows)
        assert len(rows) == s.stats().records
        assert rows[0] == s.get(rows[0].id)


def test_damaged_owner_name_is_reported_not_raised(store_path):
    build(store_path)
    # bob's name (owner id 2) becomes bytes that are not UTF-8
    damage(store_path, "agent_names", {}, lambda t: t.put(struct.pack(">I", 2), b"b\xffob"))
    with Store(store_path) as s:
        problems = s.verify()
    assert any("missing from the name index" in p and "\ufffd" in p for p in problems), problems
