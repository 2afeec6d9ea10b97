"""A hypothesis state machine: random sequences of every public Store
operation (deposit, deposit_many, forget, recall, get, neighbors, owned,
stats, records, reopen, and Planfence publish/head; deposits with metadata
and recall filtered with ``where``; deposits in scopes and scoped recall) against a small pure-Python model of
what the store must hold."""

from __future__ import annotations

import shutil
import tempfile
import zlib
from itertools import combinations
from typing import Optional

import numpy as np
import pytest
from agentsensus import Store
from agentsensus.planfence.fence import UnknownKeyError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

DIM = 8
OWNERS = ["ann", "bob", "cy"]
TEXTS = [f"the fact {n}" for n in range(14)]
KEYS = ["k0", "k1"]

owners = st.sampled_from(OWNERS)
statements = st.lists(st.sampled_from(TEXTS), min_size=1, max_size=4)


def vec(text: str) -> np.ndarray:
    v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class StoreModel:
    """The store as the API describes it, with the exact judge: a statement
    merges into the live record with the same text, else makes a new one."""

    def __init__(self) -> None:
        self.records: dict[int, tuple[str, set[str]]] = {}
        self.edges: set[frozenset[int]] = set()
        self.deposits = 0
        self.agents: set[str] = set()
        self.lineage: dict[str, tuple[str, list[str]]] = {}  # key -> (owner, values)
        self.meta: dict[tuple[int, str], dict] = {}  # (record, owner) -> that owner's metadata
        self.rounds: dict[int, int] = {}  # record -> the round it was made in
        self.scopes: dict[int, str] = {}  # record -> its scope ("" the default)

    def by_text(self, text: str, scope: str = "") -> Optional[int]:
        """The live record of that text in that scope (the exact judge never merges across scopes)."""
        return next((i for i, (t, _) in self.records.items() if t == text and self.scopes[i] == scope), None)

    def deposit(
        self, owner: str, texts: list[str], ids: list[int], rnd: int = 0, meta: Optional[dict] = None, scope: str = ""
    ) -> None:
        """Checks the ids the store chose against the model, then applies them."""
        for text, rid in zip(texts, ids):
            if self.by_text(text, scope) is None:
                self.rounds[rid] = rnd
            if meta is not None:
                self.meta[(rid, owner)] = meta
            known = self.by_text(text, scope)
            if known is not None:
                assert rid == known, f"{text!r} should merge into {known}, went to {rid}"
            else:
                assert rid not in self.records, f"new record {rid} reuses a live id"
                self.records[rid] = (text, set())
                self.scopes[rid] = scope
            self.records[rid][1].add(owner)
        self.edges |= {frozenset(p) for p in combinations(sorted(set(ids)), 2)}
        self.deposits += 1
        self.agents.add(owner)

    def forget(self, owner: str, rid: int) -> None:
        self.records[rid][1].discard(owner)
        self.meta.pop((rid, owner), None)
        if not self.records[rid][1]:
            del self.records[rid], self.scopes[rid]
            self.edges = {e for e in self.edges if rid not in e}

    def owned(self, owner: str) -> list[int]:
        return sorted(i for i, (_, o) in self.records.items() if owner in o)

    def neighbors(self, rid: int) -> list[int]:
        return sorted(next(iter(e - {rid})) for e in self.edges if rid in e)


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="stateful-")
        self.path = self.dir + "/store"
        self.store = Store(self.path, dim=DIM)
        self.model = StoreModel()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(owner=owners, texts=statements, rnd=st.integers(0, 3))
    def deposit(self, owner: str, texts: list[str], rnd: int) -> None:
        d = self.store.deposit(owner, texts, np.stack([vec(t) for t in texts]), round=rnd)
        self.model.deposit(owner, texts, d.ids, rnd)

    @rule(owner=owners, texts=statements, rnd=st.integers(0, 3), tag=st.sampled_from(["x", "y"]))
    def deposit_with_metadata(self, owner: str, texts: list[str], rnd: int, tag: str) -> None:
        meta = {"tag": tag, "n": len(texts)}
        d = self.store.deposit(owner, texts, np.stack([vec(t) for t in texts]), round=rnd, metadata=meta)
        self.model.deposit(owner, texts, d.ids, rnd, meta)

    @rule(owner=owners, texts=statements, scope=st.sampled_from(["a", "b"]))
    def deposit_in_scope(self, owner: str, texts: list[str], scope: str) -> None:
        d = self.store.deposit(owner, texts, np.stack([vec(t) for t in texts]), scope=scope)
        self.model.deposit(owner, texts, d.ids, 0, None, scope)
        assert {self.store.scope_of(i) for i in d.ids} == {scope}

    @rule(owner=owners, text=st.sampled_from(TEXTS), k=st.integers(1, 4), scope=st.sampled_from(["", "a", "b"]))
    def scoped_recall(self, owner: str, text: str, k: int, scope: str) -> None:
        q = vec(text)
        owned = [i for i in self.model.owned(owner) if self.model.scopes[i] == scope]
        hits = sorted(owned, key=lambda i: (-float(vec(self.model.records[i][0]) @ q), i))[:k]
        got = self.store.recall(owner, q, k=k, expand=False, scope=scope)
        assert [m.id for m in got] == hits

    @rule(owner=owners, text=st.sampled_from(TEXTS), k=st.integers(1, 4), pick=st.integers(0, 4))
    def filtered_recall(self, owner: str, text: str, k: int, pick: int) -> None:
        """Filtered recall equals a brute-force filter over the model, then the k best."""
        where, keep = [
            ({"tag": "x"}, lambda m, r: m.get("tag") == "x"),
            ({"tag": {"$in": ["x", "y"]}}, lambda m, r: m.get("tag") in ("x", "y")),
            ({"n": {"$gte": 2}}, lambda m, r: m.get("n", 0) >= 2),
            ({"round": {"$lte": 1}}, lambda m, r: r <= 1),
            ({"tag": "y", "round": {"$gte": 1}}, lambda m, r: m.get("tag") == "y" and r >= 1),
        ][pick]
        q = vec(text)
        passing = [
            i for i in self.model.owned(owner) if keep(self.model.meta.get((i, owner), {}), self.model.rounds[i])
        ]
        hits = sorted(passing, key=lambda i: (-float(vec(self.model.records[i][0]) @ q), i))[:k]
        got = self.store.recall(owner, q, k=k, expand=False, where=where)
        assert [m.id for m in got] == hits
        assert all(m.metadata == self.model.meta.get((m.id, owner)) for m in got)

    @rule(items=st.lists(st.tuples(owners, statements), min_size=1, max_size=3))
    def deposit_many(self, items: list[tuple[str, list[str]]]) -> None:
        got = self.store.deposit_many([(o, t, np.stack([vec(x) for x in t])) for o, t in items])
        assert len(got) == len(items)
        for (owner, texts), d in zip(items, got):
            self.model.deposit(owner, texts, d.ids)

    @rule(owner=owners, pick=st.integers(0, 50))
    def forget(self, owner: str, pick: int) -> None:
        owned = self.model.owned(owner)
        if owned:
            rid = owned[pick % len(owned)]
            self.store.forget(owner, rid)
            self.model.forget(owner, rid)
        else:  # not owned (or absent): KeyError, nothing changes
            rid = max(self.model.records, default=0) + pick + 1
            with pytest.raises(KeyError):
                self.store.forget(owner, rid)

    @rule(owner=owners, pick=st.integers(0, 50))
    def forget_what_another_owns(self, owner: str, pick: int) -> None:
        others = [i for i, (_, o) in self.model.records.items() if owner not in o]
        if others:
            with pytest.raises(KeyError):
                self.store.forget(owner, others[pick % len(others)])

    @rule(owner=owners, text=st.sampled_from(TEXTS), k=st.integers(1, 4), expand=st.booleans())
    def recall(self, owner: str, text: str, k: int, expand: bool) -> None:
        q = vec(text)
        owned = self.model.owned(owner)
        hits = sorted(owned, key=lambda i: (-float(vec(self.model.records[i][0]) @ q), i))[:k]
        want = [(i, "hit") for i in hits]
        if expand:
            seen = set(hits)
            for h in hits:
                for n in self.model.neighbors(h):
                    if n not in seen and owner in self.model.records[n][1]:
                        seen.add(n)
                        want.append((n, "edge"))
        got = self.store.recall(owner, q, k=k, expand=expand)
        assert [m.id for m in got if m.via == "hit"] == hits
        assert sorted((m.id, m.via) for m in got) == sorted(want)
        assert all(owner in m.owners for m in got)  # never another agent's memory

    @rule(pick=st.integers(0, 60))
    def get(self, pick: int) -> None:
        if pick in self.model.records:
            m = self.store.get(pick)
            text, own = self.model.records[pick]
            assert (m.text, m.owners) == (text, frozenset(own))
            assert self.store.neighbors(pick) == self.model.neighbors(pick)
        else:
            with pytest.raises(KeyError):
                self.store.get(pick)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store(self.path)

    @rule(key=st.sampled_from(KEYS), owner=owners, value=st.text(max_size=5))
    def publish(self, key: str, owner: str, value: str) -> None:
        fence = self.store.fence
        if key in self.model.lineage and self.model.lineage[key][0] != owner:
            with pytest.raises(ValueError):
                fence.publish(key, owner, value)
            return
        version = fence.publish(key, owner, value)
        values = self.model.lineage.setdefault(key, (owner, []))[1]
        values.append(value)
        assert version == len(values)

    @rule(key=st.sampled_from(KEYS))
    def head(self, key: str) -> None:
        if key in self.model.lineage:
            owner, values = self.model.lineage[key]
            assert self.store.fence.head(key) == len(values)
            assert self.store.fence.value(key) == values[-1].encode()
        else:
            with pytest.raises(UnknownKeyError):
                self.store.fence.head(key)

    @invariant()
    def owned_and_stats_match(self) -> None:
        for owner in OWNERS:
            assert self.store.owned(owner) == self.model.owned(owner)
        s = self.store.stats()
        recs = self.model.records
        assert s.records == len(recs)
        assert s.deposits == self.model.deposits
        assert s.agents == len(self.model.agents)
        assert s.shared == sum(len(o) >= 2 for _, o in recs.values())
        assert s.max_owners == max((len(o) for _, o in recs.values()), default=0)
        assert s.linked == len({i for e in self.model.edges for i in e})

    @precondition(lambda self: len(self.model.records) % 3 == 0)
    @invariant()
    def sound_and_exported_in_full(self) -> None:
        assert self.store.verify() == []
        exported = {m.id: (m.text, set(m.owners)) for m in self.store.records()}
        assert exported == self.model.records  # forgotten records are not exported


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(
    max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
