"""Recall from several threads of one process, and the Memory objects the
engine builds for recall (bindings/memory_bindings.cpp)."""

from __future__ import annotations

import dataclasses
import datetime
import gc
import weakref

import numpy as np
import pytest
from agentsensus import CorruptStoreError, Memory, Store, _core
from agentsensus._store.record_meta import to_datetime
from agentsensus.records import candidate
from helpers import DIM, in_threads, unit
from hypothesis import given, settings
from hypothesis import strategies as st

N = 300
THREADS = 4


def _fill(s: Store) -> None:
    rng = np.random.default_rng(7)
    vs = rng.standard_normal((N, DIM)).astype(np.float32)
    for i in range(0, N, 3):  # deposits of 3: each links its records, so expansion has rows
        texts = [f"fact {j}" for j in range(i, i + 3)]
        md = [{"n": j, "tag": "x" * (j % 4)} for j in range(i, i + 3)]
        s.deposit("all", texts, vs[i : i + 3], metadata=md)
        if i % 2 == 0:
            s.deposit("half", texts, vs[i : i + 3])  # merges into the same records: now shared
        if i % 30 == 0:
            s.deposit("few", texts, vs[i : i + 3], scope="notes")


def _key(rows: list[Memory]) -> list[tuple]:
    return [dataclasses.astuple(m) for m in rows]


@pytest.mark.slow
def test_threads_recall_what_one_thread_recalls(store_path):
    # exact_cutoff 16: "all" and "half" take the graph search (allow-sets,
    # widening), "few" the exact scan; one scoped recall too.
    with Store(store_path, dim=DIM, exact_cutoff=16) as s:
        _fill(s)
        qs = [unit(1000 + i) for i in range(24)]
        calls = [("all", {}), ("half", {}), ("few", {}), ("all", {"where": {"n": {"$gte": 100}}}),
                 ("few", {"scope": "notes"}), ("half", {"expand": False, "k": 9})]  # fmt: skip
        want = {(c, i): _key(s.recall(owner, q, **kw)) for c, (owner, kw) in enumerate(calls) for i, q in enumerate(qs)}
        assert all(want.values())

        def work(t: int) -> dict:
            order = sorted(want, key=lambda key: hash((t, key)))  # each thread its own order
            return {(c, i): _key(s.recall(calls[c][0], qs[i], **calls[c][1])) for c, i in order}

        for got in in_threads(THREADS, work):
            assert got == want


@pytest.mark.parametrize("keep_gil_ns", [0, 10**15])
def test_recall_is_the_same_whether_it_keeps_the_gil(store_path, keep_gil_ns):
    # 0: every recall releases the GIL; 10**15: every recall after an owner's
    # first keeps it (bindings/memory_bindings.cpp, keep_gil_below). Threads
    # recall the same either way.
    with Store(store_path, dim=DIM, exact_cutoff=16) as s:
        _fill(s)
        qs = [unit(2000 + i) for i in range(8)]
        want = [_key(s.recall(owner, q)) for owner in ("all", "few") for q in qs]
        before = _core.recall_keep_gil_ns(keep_gil_ns)
        try:
            results = in_threads(
                3, lambda t: [_key(s.recall(owner, q)) for owner in ("all", "few") for q in qs for _ in range(3)], 60
            )
            assert results == [[w for w in want for _ in range(3)]] * 3
        finally:
            _core.recall_keep_gil_ns(before)
    with pytest.raises(ValueError, match="must be >= 0"):
        _core.recall_keep_gil_ns(-1)


def test_a_short_recall_keeps_the_gil_and_a_long_one_releases_it(store_path):
    # recall_nogil_ns counts the engine time run with the GIL released: with
    # the cut at 0 every recall adds to it; with a cut no recall reaches,
    # only an owner's first recall does (nothing is known of it yet).
    with Store(store_path, dim=DIM) as s:
        _fill(s)
        before = _core.recall_keep_gil_ns(0)
        try:
            t0 = _core.recall_nogil_ns()
            for i in range(5):
                s.recall("few", unit(3000 + i))
            assert _core.recall_nogil_ns() > t0
            _core.recall_keep_gil_ns(10**15)  # also forgets what it knew of owners
            s.recall("few", unit(3100))  # the first: released
            t1 = _core.recall_nogil_ns()
            assert t1 > t0
            for i in range(5):
                s.recall("few", unit(3200 + i))
            assert _core.recall_nogil_ns() == t1
        finally:
            _core.recall_keep_gil_ns(before)


def test_engine_built_memory_is_a_plain_memory(store):
    d = store.deposit("a", ["one", "two"], np.stack([unit(1), unit(2)]), metadata={"k": [1, "v"]})
    store.deposit("b", ["one"], unit(1)[None])
    rows = store.recall("a", unit(1), k=1)
    assert [m.via for m in rows] == ["hit", "edge"]
    names = [f.name for f in dataclasses.fields(Memory)]
    for m in rows:
        assert type(m) is Memory
        assert not hasattr(m, "__dict__")  # slotted: exactly the fields
        again = Memory(**{n: getattr(m, n) for n in names})
        assert again == m and hash(again) == hash(m) and repr(again) == repr(m)
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.text = "changed"  # type: ignore[misc]
        assert m.metadata == {"k": [1, "v"]}
        assert isinstance(m.created_at, datetime.datetime) and m.created_at.tzinfo is datetime.timezone.utc
    assert rows[0].owners == frozenset({"a", "b"}) and rows[0].id == d.ids[0]
    assert rows[0].score == pytest.approx(1.0, abs=1e-5) and rows[1].score is None
    assert rows[0].lexical_score is None
    # the same as a record read with get (a Python-built Memory), but for score and via
    assert dataclasses.replace(rows[1], score=None, via="") == store.get(d.ids[1], owner="a")


def test_judge_candidate_is_a_plain_memory():
    # records.candidate sets the fields directly, as the recall binding does
    names = [f.name for f in dataclasses.fields(Memory)]
    for lexical in (None, 2.5):
        m = candidate(7, "text", frozenset({"a"}), 3, 0.25, lexical)
        want = Memory(7, "text", frozenset({"a"}), 3, 0.25, "candidate", lexical_score=lexical)
        assert type(m) is Memory and not hasattr(m, "__dict__")
        assert [getattr(m, n) for n in names] == [getattr(want, n) for n in names]
        assert m == want and hash(m) == hash(want) and repr(m) == repr(want)
        with pytest.raises(dataclasses.FrozenInstanceError):
            m.score = 1.0  # type: ignore[misc]


class Probe:
    """Something a weak reference can watch (a slotted Memory takes none)."""


def test_a_memory_without_metadata_is_left_to_reference_counting(store):
    # The binding untracks answers that hold only atomic values (no cycle
    # can run through them) and keeps the others tracked: a metadata dict
    # can be made to hold its own Memory, and that cycle must be collectable.
    store.deposit("a", ["plain"], unit(1)[None])
    store.deposit("a", ["noted"], unit(2)[None], metadata={"k": 1})
    plain, noted = (store.recall("a", unit(i), k=1, expand=False)[0] for i in (1, 2))
    assert plain.text == "plain" and not gc.is_tracked(plain) and not gc.is_tracked(plain.owners)
    assert noted.text == "noted" and gc.is_tracked(noted)
    [[many]] = store.recall_many([("a", unit(1))], k=1, expand=False)
    assert many == plain and not gc.is_tracked(many)
    probe = Probe()
    noted.metadata["cycle"] = (noted, probe)
    ref = weakref.ref(probe)
    del noted, probe
    gc.collect()
    assert ref() is None  # the cycle through the metadata was found and freed


def test_memory_from_refuses_a_class_without_slots():
    @dataclasses.dataclass(frozen=True)
    class Loose:
        id: int

    with pytest.raises(TypeError, match="not a slot"):
        _core.memory_from(Loose, (1,) * 13)
    with pytest.raises(ValueError, match="13 values needed, got 2"):
        _core.memory_from(Memory, (1, 2))


# The last microsecond a datetime holds: 9999-12-31T23:59:59.999999Z.
LAST = 253402300799999999


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(a=st.integers(0, LAST), b=st.integers(0, LAST))
def test_recalled_times_are_record_meta_times(tmp_path_factory, a, b):
    created, updated = min(a, b), max(a, b)  # a record is never updated before it was made
    path = str(tmp_path_factory.mktemp("times") / "s")
    with Store(path, dim=DIM) as s:
        rid = s.deposit("a", ["x"], unit(1)[None]).ids[0]
        s._handles().engine.load_meta([(rid, created, updated, [])])
        (m,) = s.recall("a", unit(1))
        assert (m.created_at, m.updated_at) == (to_datetime(created), to_datetime(updated))


def test_a_time_past_year_9999_is_a_damaged_store(store):
    rid = store.deposit("a", ["x"], unit(1)[None]).ids[0]
    store._handles().engine.load_meta([(rid, LAST + 1, LAST + 1, [])])
    with pytest.raises(CorruptStoreError, match="out of range"):
        store.recall("a", unit(1))
    with pytest.raises(CorruptStoreError, match="out of range"):
        store.get(rid)  # the Python path says the same


@pytest.mark.parametrize("owner", ["a", "nobody"])
@pytest.mark.parametrize(
    "query, message",
    [
        (np.full(DIM, np.nan, np.float32), "query has NaN or inf"),
        (np.full(DIM, np.inf, np.float32), "query has NaN or inf"),
        (np.zeros(DIM, np.float32), "query has zero norm"),
    ],
)
def test_a_bad_float32_query_gets_the_python_message(store, owner, query, message):
    # Such a query skips the Python checks (the engine refuses it first);
    # the message is still the one every other query shape gets.
    store.deposit("a", ["x"], unit(1)[None])
    with pytest.raises(ValueError, match=message):
        store.recall(owner, query)
    with pytest.raises(ValueError, match=message):
        store.recall(owner, query.astype(np.float64))
