"""Fence.verify and its part of Store.verify: lineage heads against their
versions, owners, and links. Damage is made with py-lmdb on a closed store."""

from __future__ import annotations

import os
import struct

import lmdb
from agentsensus import Store


def build(path: str) -> None:
    with Store(path, dim=4) as s:
        f = s.fence
        f.publish("goal", "boss", "find the ghost")
        v = f.publish("goal", "boss", "find the ghost twice")
        f.derive("plan", "planner", "walk at night", {"goal": v})
        assert f.verify() == [] and s.verify() == []


def rewrite(path: str, table: bytes, fn) -> None:
    env = lmdb.open(path, max_dbs=32)
    with env.begin(write=True, db=env.open_db(table, create=False)) as txn:
        fn(txn)
    env.close()


def test_head_past_its_versions_is_reported(tmp_path):
    path = os.fspath(tmp_path / "s")
    build(path)

    def bump(txn) -> None:
        kid, owner, head = struct.unpack("=IIQ", txn.get(b"goal"))
        txn.put(b"goal", struct.pack("=IIQ", kid, owner, head + 5))

    rewrite(path, b"lin_keys", bump)
    with Store(path) as s:
        problems = s.fence.verify()
        assert any("'goal' has head 7, but no such version is stored" in p for p in problems), problems
        assert set(problems) <= set(s.verify())  # Store.verify includes the lineage


def test_missing_linked_version_and_value_are_reported(tmp_path):
    path = os.fspath(tmp_path / "s")
    build(path)
    env = lmdb.open(path, max_dbs=32)
    with env.begin(db=env.open_db(b"lin_keys", create=False)) as txn:
        goal_id = struct.unpack("=IIQ", txn.get(b"goal"))[0]
    env.close()
    version1 = struct.pack(">IQ", goal_id, 2)
    rewrite(path, b"lin_values", lambda t: t.delete(version1))
    with Store(path) as s:
        problems = s.fence.verify()
    assert any("'goal' has no value for its head 2" in p for p in problems), problems
    rewrite(path, b"lin_versions", lambda t: t.delete(version1))
    with Store(path) as s:
        problems = s.fence.verify()
    assert any("links to 'goal' version 2, which is not stored" in p for p in problems), problems
    assert all(p.startswith("lineage: ") for p in problems)
