"""Record versions: a judge's Supersedes verdict, per-owner validity,
recall as of a round, chains, and their durability (verify, repair,
export/import, compact), on a real store."""

from __future__ import annotations

import io
import os
import struct
import tempfile
from typing import Any, Optional

import lmdb
import numpy as np
import pytest
from agentsensus import Store, Supersedes, compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def subject_judge(requests: list[Any]) -> list[Any]:
    """Statements are "<subject>: <state>": the same text merges (the store
    does that before asking), the same subject in another state supersedes,
    anything else is a new record."""
    out: list[Any] = []
    for r in requests:
        subject = r.statement.split(":")[0]
        same = [c for c in r.candidates if c.text.split(":")[0] == subject]
        out.append(Supersedes(same[0].id) if same else None)
    return out


def open_store(path: str) -> Store:
    return Store(path, dim=DIM, judge=subject_judge, min_similarity=-1.0, candidates=16)


def ids(memories: list[Any]) -> set[int]:
    return {m.id for m in memories}


def test_the_newer_state_is_current_and_the_older_one_is_recalled_as_of_its_round(store_path):
    with open_store(store_path) as s:
        paris = s.deposit("alice", ["Alice: lives in Paris"], unit(1)[None], round=1).ids[0]
        berlin = s.deposit("alice", ["Alice: moved to Berlin"], unit(2)[None], round=2).ids[0]
        assert [m.text for m in s.recall("alice", unit(1), k=5)] == ["Alice: moved to Berlin"]
        assert [m.text for m in s.recall("alice", unit(1), k=5, as_of=1)] == ["Alice: lives in Paris"]
        assert ids(s.recall("alice", unit(1), k=5, as_of=2)) == {berlin}
        old, new = s.get(paris), s.get(berlin)
        assert (old.superseded_by, old.valid_from, old.valid_until, old.supersedes) == (berlin, 1, 2, None)
        assert (new.supersedes, new.valid_from, new.valid_until, new.superseded_by) == (paris, 2, None, None)
        assert [m.id for m in s.chain(paris)] == [m.id for m in s.chain(berlin)] == [paris, berlin]
        assert [c.event for c in s.history(paris)][-1] == "SUPERSEDED"
        assert [c.event for c in s.history(berlin)][-1] == "SUPERSEDES"
        assert s.verify() == []


def test_another_owners_record_stays_current_until_its_own_statement_is_newer(store_path):
    with open_store(store_path) as s:
        paris = s.deposit("bob", ["Alice: lives in Paris"], unit(1)[None], round=1).ids[0]
        s.deposit("alice", ["Alice: lives in Paris"], unit(1)[None], round=1)
        berlin = s.deposit("alice", ["Alice: moved to Berlin"], unit(2)[None], round=2).ids[0]
        assert ids(s.recall("alice", unit(1), k=5)) == {berlin}
        assert ids(s.recall("bob", unit(1), k=5)) == {paris}  # bob has not learned it
        s.deposit("bob", ["Alice: moved to Berlin"], unit(2)[None], round=5)  # merges into berlin
        assert ids(s.recall("bob", unit(1), k=5)) == {berlin}
        assert ids(s.recall("bob", unit(1), k=5, as_of=4)) == {paris}


def test_a_second_supersession_of_one_record_continues_its_chain(store_path):
    def always_first(requests: list[Any]) -> list[Any]:
        return [Supersedes(min(c.id for c in r.candidates)) for r in requests]

    with Store(store_path, dim=DIM, judge=always_first, min_similarity=-1.0) as s:
        a = s.deposit("x", ["one"], unit(1)[None], round=1).ids[0]
        b = s.deposit("x", ["two"], unit(2)[None], round=2).ids[0]
        c = s.deposit("y", ["three"], unit(3)[None], round=3).ids[0]  # names a, lands after b
        assert [m.id for m in s.chain(a)] == [a, b, c]
        assert s.get(c).supersedes == b
        assert s.verify() == []


def test_forget_joins_the_chain_around_a_deleted_record(store_path):
    with open_store(store_path) as s:
        a = s.deposit("x", ["Alice: in Paris"], unit(1)[None], round=1).ids[0]
        b = s.deposit("y", ["Alice: in Berlin"], unit(2)[None], round=2).ids[0]
        c = s.deposit("x", ["Alice: in Rome"], unit(3)[None], round=3).ids[0]
        s.forget("y", b)
        assert [m.id for m in s.chain(a)] == [a, c]
        assert s.verify() == []
        assert ids(s.recall("x", unit(1), k=5)) == {c}
        s.forget("x", a)  # a closed record forgets as any other
        assert [m.id for m in s.chain(c)] == [c] and s.get(c).supersedes is None
        assert s.verify() == []


def test_superseded_records_stay_out_under_where_scope_expansion_lexical_and_recall_many(store_path):
    with open_store(store_path) as s:
        meta = {"kind": "place"}
        old = s.deposit("a", ["Alice: lives in Paris", "Bob: is a baker"], np.stack([unit(1), unit(5)]), round=1)
        new = s.deposit("a", ["Alice: moved to Berlin"], unit(2)[None], round=2, metadata=[meta]).ids[0]
        paris, baker = old.ids
        # baker is one edge from paris: expansion must not bring paris back from a baker hit
        got = s.recall("a", unit(5), k=1)
        assert baker in ids(got) and paris not in ids(got)
        assert paris in ids(s.recall("a", unit(5), k=1, as_of=1))
        assert ids(s.recall("a", unit(1), k=5, where={"round": {"$lte": 2}})) == {new, baker}
        assert paris not in ids(s.recall("a", "Alice Paris", k=5, lexical=True)) if s.embed else True
        many = s.recall_many([("a", unit(1)), ("a", unit(2))], k=5)
        assert all(paris not in ids(m) for m in many)
        assert all(paris in ids(m) for m in s.recall_many([("a", unit(1))], k=5, as_of=1))
        s.deposit("a", ["Carol: in Oslo"], unit(7)[None], round=1, scope="w")
        s.deposit("a", ["Carol: in Lima"], unit(8)[None], round=3, scope="w")
        assert [m.text for m in s.recall("a", unit(7), k=5, scope="w")] == ["Carol: in Lima"]
        assert [m.text for m in s.recall("a", unit(7), k=5, scope="w", as_of=2)] == ["Carol: in Oslo"]


def test_lexical_recall_leaves_superseded_records_out(tmp_path):
    from agentsensus import embedders

    with Store(str(tmp_path / "s"), embed=embedders.hash, judge=subject_judge, min_similarity=-1.0) as s:
        paris = s.deposit("a", ["Alice: lives in Paris"], round=1).ids[0]
        berlin = s.deposit("a", ["Alice: moved to Berlin"], round=2).ids[0]
        got = ids(s.recall("a", "Alice Paris", k=5, lexical=True))
        assert berlin in got and paris not in got
        with pytest.raises(ValueError, match="as_of"):
            s.recall("a", "Alice", lexical=True, as_of=1)


def test_bad_verdicts_and_as_of_are_refused_with_nothing_written(store_path):
    with open_store(store_path) as s:
        s.deposit("a", ["Alice: in Paris"], unit(1)[None], round=1)
        before = s.stats()
        with pytest.raises(ValueError, match="not among its candidates"):
            s.deposit("a", ["Alice: in Rome"], unit(2)[None], judge=lambda rs: [Supersedes(99) for _ in rs])
        with pytest.raises(TypeError, match="Supersedes id"):
            s.deposit("a", ["Alice: in Rome"], unit(2)[None], judge=lambda rs: [Supersedes("1") for _ in rs])
        assert s.stats() == before
        with pytest.raises(ValueError, match="as_of"):
            s.recall("a", unit(1), as_of=-1)
        with pytest.raises(TypeError, match="as_of"):
            s.recall("a", unit(1), as_of="1")


def test_supersedes_in_one_batch_links_records_of_that_batch(store_path):
    with open_store(store_path) as s:
        got = s.deposit_many(
            [("a", ["Alice: in Paris"], unit(1)[None]), ("a", ["Alice: in Berlin"], unit(2)[None])], round=1
        )
        first, second = got[0].ids[0], got[1].ids[0]
        assert [m.id for m in s.chain(first)] == [first, second]
        assert ids(s.recall("a", unit(1), k=5)) == {second}


# -- durability: every durable path carries the chains ------------------------------


def _versions(s: Store) -> dict[int, tuple[Optional[int], Optional[int]]]:
    return {m.id: (m.supersedes, m.superseded_by) for m in s.records()}


def _chained(path: str) -> None:
    with open_store(path) as s:
        s.deposit("a", ["Alice: in Paris", "Bob: a baker"], np.stack([unit(1), unit(5)]), round=1)
        s.deposit("b", ["Alice: in Paris"], unit(1)[None], round=1)
        s.deposit("a", ["Alice: in Berlin"], unit(2)[None], round=2)
        s.deposit("b", ["Alice: in Rome", "Bob: a painter"], np.stack([unit(3), unit(6)]), round=3)


def test_export_and_import_carry_the_chains(tmp_path):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    _chained(src)
    buf = io.StringIO()
    with open_store(src) as s:
        export_jsonl(s, buf)
        want = _versions(s)
        recalls = {o: [ids(s.recall(o, unit(1), k=5, as_of=r)) for r in (1, 2, 3)] for o in "ab"}
    assert '"supersedes"' in buf.getvalue()
    import_jsonl(io.StringIO(buf.getvalue()), dst)
    with open_store(dst) as s:
        assert _versions(s) == want
        assert {o: [ids(s.recall(o, unit(1), k=5, as_of=r)) for r in (1, 2, 3)] for o in "ab"} == recalls
        assert s.verify() == []


def test_import_refuses_a_chain_that_forks(tmp_path):
    src = str(tmp_path / "src")
    _chained(src)
    buf = io.StringIO()
    with open_store(src) as s:
        export_jsonl(s, buf)
    lines = buf.getvalue().splitlines()
    # record 5 (Bob: a painter, which superseded 2) claims record 1, which record 3 already supersedes
    forked = [ln.replace('"supersedes": 2', '"supersedes": 1') if '"id": 5,' in ln else ln for ln in lines]
    assert forked != lines
    with pytest.raises(ValueError, match="another record supersedes"):
        import_jsonl(io.StringIO("\n".join(forked)), str(tmp_path / "dst"))


def test_compact_carries_the_chains(tmp_path):
    path = str(tmp_path / "s")
    _chained(path)
    with open_store(path) as s:
        want = _versions(s)
    compact(path)
    with open_store(path) as s:
        assert _versions(s) == want and s.verify() == []


def _damage_versions(path: str, fn: Any) -> None:
    env = lmdb.open(path, max_dbs=32, subdir=True)
    db = env.open_db(b"versions", create=False)
    with env.begin(write=True, db=db) as txn:
        fn(txn)
    env.close()


def test_verify_reports_a_one_sided_link_and_repair_mends_it(tmp_path):
    path = str(tmp_path / "s")
    _chained(path)
    with open_store(path) as s:
        want = _versions(s)
        berlin = next(m.id for m in s.records() if m.text == "Alice: in Berlin")
    # the successor forgets its predecessor: one side of the link is gone
    _damage_versions(path, lambda t: t.put(struct.pack(">Q", berlin), struct.pack("=QQ", 0, want[berlin][1] or 0)))
    with open_store(path) as s:
        problems = s.verify()
        assert any(p.startswith("I21") and "does not link back" in p for p in problems), problems
        s.close()
    with Store(path) as s:
        s.repair()
    with open_store(path) as s:
        assert s.verify() == []
        assert _versions(s) == want  # rebuilt from the links that remain


def test_repair_keeps_a_chain_joined_around_a_record_it_drops(tmp_path):
    path = str(tmp_path / "s")
    _chained(path)
    with open_store(path) as s:
        chain = [m.id for m in s.chain(1)]
    assert len(chain) == 3
    env = lmdb.open(path, max_dbs=32, subdir=True)
    with env.begin(write=True, db=env.open_db(b"vectors", create=False)) as t:
        t.delete(struct.pack(">Q", chain[1]))  # the middle record cannot be served
    env.close()
    with Store(path) as s:
        assert s.verify()
        s.repair()
    with open_store(path) as s:
        assert [m.id for m in s.chain(chain[0])] == [chain[0], chain[2]]
        assert s.verify() == []


# -- the property: as_of equals a replay of the log ----------------------------------

SUBJECTS, STATES, OWNERS = 3, 3, ("p", "q", "r")


def _text(subject: int, state: int) -> str:
    return f"s{subject}: state {state}"


def _vec(subject: int, state: int) -> np.ndarray:
    return unit(100 + 10 * subject + state)


class Model:
    """The log replayed: records per text in creation order, each owner's
    first round in each record, and each subject's chain of live records."""

    def __init__(self) -> None:
        self.record: dict[str, int] = {}  # text -> id while live
        self.subject: dict[int, int] = {}  # id -> subject
        self.joined: dict[tuple[str, int], int] = {}  # (owner, id) -> its first round there
        self.order: list[int] = []  # live ids, creation order

    def deposit(self, owner: str, subject: int, state: int, rnd: int, rid: int) -> None:
        text = _text(subject, state)
        if text not in self.record:
            self.record[text] = rid
            self.subject[rid] = subject
            self.order.append(rid)
        assert self.record[text] == rid
        key = (owner, rid)
        self.joined[key] = min(self.joined.get(key, rnd), rnd)

    def forget(self, owner: str, rid: int) -> None:
        del self.joined[(owner, rid)]
        if not any(i == rid for (_o, i) in self.joined):
            self.order.remove(rid)
            self.record = {t: i for t, i in self.record.items() if i != rid}

    def held(self, owner: str, rnd: Optional[int]) -> set[int]:
        def by(rid: int) -> bool:
            j = self.joined.get((owner, rid))
            return j is not None and (rnd is None or j <= rnd)

        out = set()
        for rid in self.order:
            later = [i for i in self.order if self.subject[i] == self.subject[rid] and i > rid]
            if by(rid) and not any(by(i) for i in later):
                out.add(rid)
        return out


op = st.one_of(
    st.tuples(
        st.just("deposit"),
        st.sampled_from(OWNERS),
        st.integers(0, SUBJECTS - 1),
        st.integers(0, STATES - 1),
        st.integers(0, 6),
    ),
    st.tuples(st.just("forget"), st.sampled_from(OWNERS), st.integers(0, 20)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=14))
def test_recall_as_of_any_round_equals_a_replay_of_the_log(ops):
    model = Model()
    with tempfile.TemporaryDirectory() as d, open_store(os.path.join(d, "s")) as s:
        for o in ops:
            if o[0] == "deposit":
                _, owner, subject, state, rnd = o
                rid = s.deposit(owner, [_text(subject, state)], _vec(subject, state)[None], round=rnd).ids[0]
                model.deposit(owner, subject, state, rnd, rid)
            else:
                _, owner, pick = o
                mine = s.owned(owner)
                if mine:
                    rid = mine[pick % len(mine)]
                    s.forget(owner, rid)
                    model.forget(owner, rid)
        assert s.verify() == []
        for owner in OWNERS:
            for rnd in (None, 0, 1, 2, 3, 4, 5, 6):
                got = ids(s.recall(owner, unit(1), k=32, expand=False, as_of=rnd))
                assert got == model.held(owner, rnd), (owner, rnd)
        many = s.recall_many([(o, unit(1)) for o in OWNERS], k=32, expand=False, as_of=3)
        assert [ids(m) for m in many] == [model.held(o, 3) for o in OWNERS]
