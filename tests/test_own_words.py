"""``Store(disclosure="own_words")``: an owner's reads show only its own
statements and itself as owner, and another owner's deposits (or forgets)
never change what it reads; ``"shared"`` stays the default."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zlib

import numpy as np
import pytest
from agentsensus import Store
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, EVENT, near, truth_judge, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NAMES = ("Ann", "Bob", "Cyd", "Dee")
# Wordings of one event, each naming someone (any owner may name anyone, as
# the probe of docs/reliability.md names its victim): keep_names keeps the
# shorter wording unless it drops a name, keep_shorter the shorter one, so
# both rewrite records' texts with later depositors' words.
WORDINGS = (
    "{n} saw event {e}",
    "{n} saw event {e} by the Old Mill",
    "at dusk {n} saw event {e} happen near the Old Mill gate",
)


def embed(texts):
    """Statements of one event land near one another (their merges need candidates)."""
    out = []
    for t in texts:
        m = EVENT.search(t)
        seed = zlib.crc32(t.encode())
        out.append(near(unit(int(m.group(1))), seed, 0.08) if m else unit(seed))
    return np.stack(out)


def open_store(path, **kw):
    return Store(path, dim=DIM, embed=embed, judge=truth_judge, min_similarity=0.3, **kw)


# A deposit: (owner, [(event, wording, who it names)], scope, tag); a forget: (owner, which of its records).
deposit_op = st.tuples(
    st.integers(0, 3),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=3),
    st.sampled_from(["", "s1"]),
    st.sampled_from(["x", "y"]),
)
forget_op = st.tuples(st.integers(0, 3), st.integers(0, 20))
ops = st.lists(st.one_of(deposit_op, deposit_op, deposit_op, forget_op), min_size=2, max_size=14)


def apply(s, op, said):
    """Runs one op; ``said[owner]`` gathers every text ``owner`` deposited."""
    if len(op) == 2:
        who, pick = op
        owner = NAMES[who]
        held = s.owned(owner) if owner in said else []
        if held:
            s.forget(owner, held[pick % len(held)])
        return
    who, items, scope, tag = op
    owner = NAMES[who]
    texts = [WORDINGS[w].format(n=NAMES[named], e=e) for e, w, named in items]
    s.deposit(owner, texts, scope=scope, metadata={"tag": tag}, round=len(said.get(owner, ())) % 3)
    said.setdefault(owner, set()).update(texts)


def views(s, owner):
    """Every owner-scoped read of ``owner``, as tuples."""
    rows = []
    for e in range(3):
        rows += s.recall(owner, unit(e), k=4)
        rows += s.recall(owner, f"event {e} Old Mill", k=4, lexical=True)
        rows += s.recall(owner, unit(e), k=3, scope="s1")
        rows += s.recall(owner, unit(e), k=3, where={"tag": "x"}, threshold=0.0)
    rows += [s.get(rid, owner=owner) for rid in s.owned(owner)]
    return rows


def as_tuple(m):
    return (m.id, m.text, m.owners, m.round, m.score, m.via, m.metadata, m.created_at, m.updated_at, m.lexical_score)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.sampled_from(["keep_names", "keep_shorter"]))
def test_own_words_reads_show_only_the_callers_words_and_name(script, policy):
    path = tempfile.mkdtemp()
    try:
        with open_store(path, merge_policy=policy, disclosure="own_words") as s:
            said: dict[str, set[str]] = {}
            for op in script:
                apply(s, op, said)
            for owner in said:
                owned = set(s.owned(owner))
                for m in views(s, owner):
                    assert m.text in said[owner], (owner, m)
                    assert m.owners == frozenset({owner}), (owner, m)
                    assert m.id in owned and m.via in ("hit", "")
                    assert m.created_at is None and m.updated_at is None
            assert s.verify() == []
    finally:
        shutil.rmtree(path, ignore_errors=True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, ops, st.integers(0, 3), st.sampled_from(["keep_names", "keep_shorter"]))
def test_other_owners_deposits_and_forgets_never_change_what_an_owner_reads(before, after, victim, policy):
    path = tempfile.mkdtemp()
    owner = NAMES[victim]
    try:
        with open_store(path, merge_policy=policy, disclosure="own_words") as s:
            said: dict[str, set[str]] = {}
            for op in before:
                apply(s, op, said)
            seen = [as_tuple(m) for m in views(s, owner)] if owner in said else []
            for op in after:
                if op[0] != victim:  # everyone but the victim
                    apply(s, op, said)
            assert ([as_tuple(m) for m in views(s, owner)] if owner in said else []) == seen
    finally:
        shutil.rmtree(path, ignore_errors=True)


VICTIM = "Alice hid the spare key under the old flowerpot"
PROBE = "Alice hid the spare key somewhere"  # shorter, the same names: keep_names keeps it


def merge_probe(path, disclosure=None):
    """alice deposits; what she reads before and after bob's probe merges into her record."""
    kw = {} if disclosure is None else {"disclosure": disclosure}
    with open_store(path, **kw) as s:
        rid = s.deposit("alice", [VICTIM, "The garden gate squeaks"], vectors=np.stack([unit(1), unit(2)])).ids[0]

        def read():
            return (
                [as_tuple(m) for m in s.recall("alice", unit(1), k=2)],
                [as_tuple(m) for m in s.recall("alice", "where is the spare key", k=2, lexical=True)],
                as_tuple(s.get(rid, owner="alice")),
            )

        seen = read()
        d = s.deposit("bob", [PROBE], vectors=near(unit(1), 7), judge=lambda rs: [rs[0].candidates[0].id])
        assert d.ids == [rid] and d.merged == [True]
        return s.disclosure, s.get(rid).text, seen, read(), [as_tuple(m) for m in s.recall("bob", unit(1), k=2)]


def test_a_probe_under_keep_names_leaves_the_victims_own_words_recall_as_it_was(tmp_path):
    disclosure, text, seen, now, probe_sees = merge_probe(str(tmp_path / "own"), "own_words")
    assert disclosure == "own_words"
    assert text == PROBE  # the record's text is the prober's now ...
    assert now == seen  # ... and alice reads exactly what she read before
    assert [m[1:4] for m in probe_sees] == [(PROBE, frozenset({"bob"}), 0)]  # bob: his words, his name


def test_shared_stays_the_default_and_shows_the_merged_text_and_owner_set(tmp_path):
    disclosure, text, seen, now, probe_sees = merge_probe(str(tmp_path / "shared"))
    assert disclosure == "shared"
    assert text == PROBE
    assert seen[0][0][1] == VICTIM and now[0][0][1] == PROBE  # the paper's behaviour: the merged text
    assert now[0][0][2] == frozenset({"alice", "bob"})
    assert probe_sees[0][1] == PROBE and probe_sees[0][2] == frozenset({"alice", "bob"})


def test_a_forget_that_hands_the_record_to_an_owner_keeps_its_view(tmp_path):
    """bob made the record, ann merged two statements in; bob's forget makes
    ann's second statement the record's first (row 0): she reads the same."""
    with open_store(str(tmp_path / "s"), merge_policy="keep_shorter", disclosure="own_words") as s:
        rid = s.deposit("bob", ["Bob saw event 1"]).ids[0]
        assert s.deposit("ann", ["Ann saw event 1 by the Old Mill"]).ids == [rid]
        assert s.deposit("ann", ["Ann saw event 1"]).ids == [rid]
        seen = [as_tuple(m) for m in views(s, "ann")]
        s.forget("bob", rid)
        assert s._handles().engine.said(rid)[1][0][1:] == ("ann", 0, "Ann saw event 1")  # now row 0
        assert [as_tuple(m) for m in views(s, "ann")] == seen
        assert s.get(rid, owner="ann").text == "Ann saw event 1"


def test_own_words_scores_are_the_callers_own_statements(tmp_path):
    """A sole owner's score is vector recall's; a later depositor is scored on its own vector."""
    with open_store(str(tmp_path / "own"), disclosure="own_words") as own, open_store(str(tmp_path / "sh")) as sh:
        for s in (own, sh):
            s.deposit("alice", ["Alice saw event 1"], vectors=unit(1))
            s.deposit("bob", ["Bob saw event 1"], vectors=near(unit(1), 3, 0.3))
        q = near(unit(1), 9, 0.2)
        assert [m.score for m in own.recall("alice", q)] == [m.score for m in sh.recall("alice", q)]
        bob = own.recall("bob", q)[0].score
        want = float(np.dot(q / np.linalg.norm(q), near(unit(1), 3, 0.3)))  # cosine with bob's own vector
        assert bob == pytest.approx(want, abs=1e-5) and bob != sh.recall("bob", q)[0].score


def test_own_words_recall_follows_no_edge_and_refuses_record_fields_in_where(tmp_path):
    with open_store(str(tmp_path / "s"), disclosure="own_words") as s:
        s.deposit("alice", ["Alice saw event 1", "Alice saw event 3"], vectors=np.stack([unit(1), unit(3)]))
        assert [m.via for m in s.recall("alice", unit(1), k=1)] == ["hit"]  # shared would add the edge row
        for field in ("round", "created_at", "updated_at"):
            with pytest.raises(ValueError, match=f"{field} is the shared record's"):
                s.recall("alice", unit(1), where={"$and": [{field: {"$gte": 0}}]})
        with pytest.raises(KeyError, match="not owned by 'bob'"):
            s.get(1, owner="bob")


def test_a_record_without_statements_shows_only_to_a_sole_owner(tmp_path):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    with open_store(src) as s:
        shared = s.deposit("alice", ["Alice saw event 1"], vectors=unit(1)).ids[0]
        assert s.deposit("bob", ["Bob saw event 1"], vectors=near(unit(1), 2)).ids == [shared]
        alone = s.deposit("alice", ["Alice saw event 3"], vectors=unit(3)).ids[0]
        out = io.StringIO()
        export_jsonl(s, out)
    lines = out.getvalue().splitlines()
    import_jsonl(io.StringIO("\n".join([lines[0].replace('"format": 5', '"format": 2')] + lines[1:])), dst)
    with open_store(dst, disclosure="own_words") as s:
        assert s._handles().engine.said(alone)[1] == []  # as a store of schema 1 wrote it
        assert [(m.id, m.text) for m in s.recall("alice", unit(1), k=5)] == [(alone, "Alice saw event 3")]
        assert s.recall("bob", unit(1), k=5) == []
        assert s.get(alone, owner="alice").text == "Alice saw event 3"
        with pytest.raises(KeyError):
            s.get(shared, owner="bob")


def test_an_open_store_is_not_shared_with_an_adapter_asking_another_disclosure(tmp_path):
    from agentsensus.integrations.open_stores import acquire, release

    path = str(tmp_path / "s")
    store, _ = acquire(path, {"dim": DIM, "disclosure": "own_words"})
    try:
        with pytest.raises(ValueError, match="already open in this process with disclosure='own_words'"):
            acquire(path, {"disclosure": "shared"})
        again, _ = acquire(path, {"disclosure": "own_words"})
        assert again is store
        release(again)
    finally:
        release(store)
    assert store.closed


@pytest.mark.parametrize("bad", ["x", "", None, 1, "Own_Words"])
def test_a_bad_disclosure_is_one_line_and_writes_nothing(tmp_path, bad):
    path = tmp_path / "store"
    with pytest.raises(ValueError, match=r"^disclosure must be 'shared' or 'own_words', got "):
        Store(str(path), dim=DIM, disclosure=bad)
    assert not os.path.exists(path)
