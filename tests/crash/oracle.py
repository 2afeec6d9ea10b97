"""The crash harness's verifier: replays the writer's journal into a model of
the store and compares the reopened store with it.

Every acknowledged operation must be present in full; the one operation that
was running when the writer died (an intent without an acknowledgement) must
be either wholly present or wholly absent; nothing else may differ. On top of
that the store's own ``verify()`` (index against LMDB, owner and owned
indexes, edge symmetry, lineage heads against versions) must come back clean,
and recall through the index must find each record from its vector.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Optional

from workload import vector


@dataclass
class Model:
    """What the store must hold: records (id -> text, owners), affiliation
    edges, and every lineage key's values by version."""

    records: dict[int, tuple[str, frozenset[str]]] = field(default_factory=dict)
    edges: set[frozenset[int]] = field(default_factory=set)
    lineage: dict[str, list[str]] = field(default_factory=dict)

    def deposit(self, owner: str, statements: list[str], ids: list[int]) -> None:
        for text, rid in zip(statements, ids):
            old_text, owners = self.records.get(rid, (text, frozenset()))
            if old_text != text:
                raise AssertionError(f"record {rid} holds {old_text!r}, but {text!r} was deposited into it")
            self.records[rid] = (text, owners | {owner})
        distinct = sorted(set(ids))
        self.edges |= {frozenset(p) for p in combinations(distinct, 2)}

    def forget(self, owner: str, rid: int) -> None:
        text, owners = self.records[rid]
        if owners - {owner}:
            self.records[rid] = (text, owners - {owner})
        else:
            del self.records[rid]
            self.edges = {e for e in self.edges if rid not in e}

    def apply(self, op: dict[str, Any], result: Any) -> None:
        kind = op["op"]
        if kind == "deposit":
            self.deposit(op["owner"], op["statements"], result)
        elif kind == "deposit_many":
            for (owner, statements), ids in zip(op["items"], result):
                self.deposit(owner, statements, ids)
        elif kind == "forget" and result:
            self.forget(op["owner"], op["id"])
        elif kind in ("publish", "derive"):
            values = self.lineage.setdefault(op["key"], [])
            if result != len(values) + 1:
                raise AssertionError(f"{op['key']!r} got version {result}, expected {len(values) + 1}")
            values.append(op["value"])


def read_journal(path: str) -> tuple[list[tuple[dict, Any]], Optional[dict]]:
    """The acknowledged (op, result) pairs, and the op in flight (or None).
    A torn last line (the kill hit the write) counts as not written."""
    acked: list[tuple[dict, Any]] = []
    pending: Optional[dict] = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                break
            if "intent" in entry:
                pending = entry["intent"]
            else:
                assert pending is not None, "an acknowledgement without an intent"
                acked.append((pending, entry["ack"]))
                pending = None
    return acked, pending


def observe(store: Any) -> Model:
    """The store's contents in the model's terms."""
    m = Model()
    for rec in store.records():
        m.records[rec.id] = (rec.text, rec.owners)
        m.edges |= {frozenset((rec.id, n)) for n in store.neighbors(rec.id)}
    fence = store.fence
    for key in fence.keys():
        m.lineage[key] = [fence.value(key, v).decode() for v in range(1, fence.head(key) + 1)]
    return m


def in_flight_effect(model: Model, op: dict[str, Any], seen: Model) -> Model:
    """The model with the in-flight op applied as the store would have
    applied it (the ids of its statements are read from the store)."""
    after = copy.deepcopy(model)
    by_text = {text: rid for rid, (text, _) in seen.records.items()}
    kind = op["op"]
    if kind == "deposit":
        after.deposit(op["owner"], op["statements"], [by_text.get(t, -1) for t in op["statements"]])
    elif kind == "deposit_many":
        for owner, statements in op["items"]:
            after.deposit(owner, statements, [by_text.get(t, -1) for t in statements])
    elif kind == "forget":
        if op["id"] in after.records and op["owner"] in after.records[op["id"]][1]:
            after.forget(op["owner"], op["id"])
    elif kind in ("publish", "derive"):
        after.lineage.setdefault(op["key"], []).append(op["value"])
    return after


def check(store: Any, journal_path: str) -> int:
    """Asserts the reopened store matches the journal; returns the number of
    acknowledged operations verified."""
    acked, pending = read_journal(journal_path)
    model = Model()
    for op, result in acked:
        model.apply(op, result)
    problems = store.verify()
    assert problems == [], f"verify() after the crash: {problems[:5]}"
    seen = observe(store)
    if seen != model:
        assert pending is not None, _diff(model, seen, "no operation was in flight")
        after = in_flight_effect(model, pending, seen)
        assert seen == after, _diff(after, seen, f"in flight: {pending}")
    # The index serves what LMDB holds: each record is its owner's nearest
    # neighbour to its own vector.
    for rid, (text, owners) in list(seen.records.items())[:40]:
        hits = store.recall(min(owners), vector(text), k=1, expand=False)
        assert hits and hits[0].id == rid, f"recall of record {rid} returned {hits}"
    return len(acked)


def _diff(want: Model, got: Model, context: str) -> str:
    lines = [f"the store differs from the journal ({context}):"]
    for rid in sorted(set(want.records) | set(got.records)):
        if want.records.get(rid) != got.records.get(rid):
            lines.append(f"  record {rid}: journal {want.records.get(rid)} store {got.records.get(rid)}")
    if want.edges != got.edges:
        lines.append(f"  edges only in journal {want.edges - got.edges}, only in store {got.edges - want.edges}")
    for key in sorted(set(want.lineage) | set(got.lineage)):
        if want.lineage.get(key) != got.lineage.get(key):
            lines.append(f"  lineage {key!r}: journal {want.lineage.get(key)} store {got.lineage.get(key)}")
    return "\n".join(lines[:20])
