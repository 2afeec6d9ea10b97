"""The deposit path: merges, owner sets, edges, the merge log, judges and
merge policies, deposit_many and adeposit."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from agentsensus import Store, judges, policies
from helpers import DIM, RecordingJudge, near, snapshot, unit


def test_new_statements_become_records_linked_pairwise(store):
    d = store.deposit("alice", ["a one", "a two", "a three"], np.stack([unit(1), unit(2), unit(3)]))
    assert d.merged == [False, False, False]
    assert len(set(d.ids)) == 3
    for i in d.ids:
        assert store.get(i).owners == frozenset({"alice"})
        assert store.neighbors(i) == sorted(set(d.ids) - {i})
    assert store.owned("alice") == sorted(d.ids)


def test_judge_merge_unions_owner_sets_and_logs(store_path):
    judge = RecordingJudge(lambda s, c: s.split()[-1] == c.split()[-1])
    with Store(store_path, dim=DIM, judge=judge, min_similarity=0.5, merge_policy="keep_shorter") as s:
        a = s.deposit("alice", ["Claudius poisoned the king"], unit(1)[None], round=3)
        b = s.deposit(
            "bob", ["The king was poisoned by Claudius, uncle of Hamlet, the king"], near(unit(1), 9)[None], round=4
        )
        assert b.merged == [True] and b.ids == a.ids
        m = s.get(a.ids[0])
        assert m.owners == frozenset({"alice", "bob"})
        assert m.text == "Claudius poisoned the king"  # keep-shorter
        assert m.round == 3
        [log] = list(s.merges())
        assert (log.survivor, log.kept, log.owner, log.round) == (a.ids[0], m.text, "bob", 4)
        assert log.discarded.startswith("The king was poisoned")
        st = s.stats()
        assert (st.records, st.merges, st.shared, st.max_owners) == (1, 1, 1, 2)


def test_keep_shorter_takes_the_incoming_text_when_shorter(store_path):
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5) as s:
        a = s.deposit("alice", ["Horatio sees the ghost upon the platform at night"], unit(1)[None])
        s.deposit("bob", ["Horatio sees the ghost"], near(unit(1), 2)[None])
        assert s.get(a.ids[0]).text == "Horatio sees the ghost"
        [log] = list(s.merges())
        assert log.discarded == "Horatio sees the ghost upon the platform at night"


def test_text_is_verbatim(store):
    weird = "  Ünïcödé\u00a0text — with  spaces\tand ﬁ ligature  "
    d = store.deposit("alice", [weird], unit(1)[None])
    assert store.get(d.ids[0]).text == weird
    assert store.recall("alice", unit(1))[0].text == weird


def test_exact_duplicates_merge_without_the_judge(store_path):
    judge = RecordingJudge()
    with Store(store_path, dim=DIM, judge=judge, candidates=0) as s:
        a = s.deposit("alice", ["The  Queen drinks."], unit(1)[None])
        # NFKC, casefold, whitespace: all the same statement; a different vector too
        b = s.deposit("bob", ["the queen\tDRINKS."], unit(50)[None])
        c = s.deposit("carol", ["ＴＨＥ QUEEN DRINKS."], unit(51)[None])
        assert b.merged == [True] and c.merged == [True]
        assert b.ids == a.ids == c.ids
        assert s.get(a.ids[0]).owners == frozenset({"alice", "bob", "carol"})
        assert judge.calls == []


def test_exact_duplicates_within_one_deposit(store):
    d = store.deposit("alice", ["Same thing", "same  thing", "other"], np.stack([unit(1), unit(2), unit(3)]))
    assert d.ids[0] == d.ids[1] and d.merged == [False, True, False]
    assert store.neighbors(d.ids[0]) == [d.ids[2]]
    assert store.stats().records == 2


def test_judge_called_once_per_deposit_with_all_candidate_statements(store_path):
    judge = RecordingJudge()
    with Store(store_path, dim=DIM, judge=judge, min_similarity=0.9) as s:
        s.deposit("alice", ["one", "two"], np.stack([unit(1), unit(2)]))
        assert judge.calls == []  # nothing to compare against yet
        s.deposit("bob", ["uno", "dos", "unrelated"], np.stack([near(unit(1), 5), near(unit(2), 6), unit(77)]))
        assert len(judge.calls) == 1
        [reqs] = judge.calls
        assert [r.statement for r in reqs] == ["uno", "dos"]
        assert all(r.owner == "bob" for r in reqs)
        for r in reqs:
            assert r.candidates and all(c.score is not None and c.score >= 0.9 for c in r.candidates)
            assert [c.score for c in r.candidates] == sorted((c.score for c in r.candidates), reverse=True)
        # Owner sets stay from the judge unless the store allows them (judge_sees_owners).
        assert reqs[0].candidates[0].text == "one" and reqs[0].candidates[0].owners == frozenset()


def test_candidates_limit_and_min_similarity(store_path):
    judge = RecordingJudge()
    base = unit(1)
    with Store(store_path, dim=DIM, judge=judge, candidates=3, min_similarity=0.8) as s:
        for i in range(6):
            s.deposit("a", [f"near {i}"], near(base, 10 + i, 0.02)[None])
        s.deposit("a", ["far"], unit(99)[None])
        s.deposit("b", ["query"], base[None])
        [reqs] = judge.calls[-1:]
        assert len(reqs[0].candidates) == 3
        assert all(c.text.startswith("near") for c in reqs[0].candidates)


@pytest.mark.parametrize(
    "answer, error",
    [
        (lambda reqs: [12345] * len(reqs), ValueError),
        (lambda reqs: [], ValueError),
        (lambda reqs: [None] * (len(reqs) + 1), ValueError),
        (lambda reqs: ["1"] * len(reqs), TypeError),
        (lambda reqs: [True] * len(reqs), TypeError),
        (lambda reqs: None, TypeError),
    ],
)
def test_bad_judge_answers_write_nothing(store_path, answer, error):
    with Store(store_path, dim=DIM, min_similarity=0.5) as s:
        s.deposit("a", ["one"], unit(1)[None])
        before = snapshot(s)
        with pytest.raises(error):
            s.deposit("b", ["uno", "new"], np.stack([near(unit(1), 3), unit(4)]), judge=answer)
        assert snapshot(s) == before


def test_judge_that_raises_leaves_store_unchanged(store_path):
    def boom(reqs):
        raise RuntimeError("model unavailable")

    with Store(store_path, dim=DIM, min_similarity=0.5, judge=boom) as s:
        s.deposit("a", ["one"], unit(1)[None])  # no candidates yet: judge not called
        before = snapshot(s)
        with pytest.raises(RuntimeError, match="model unavailable"):
            s.deposit("b", ["uno", "brand new"], np.stack([near(unit(1), 3), unit(4)]))
        assert snapshot(s) == before
        assert s.stats().records == 1


def test_per_call_judge_overrides_default(store_path):
    with Store(store_path, dim=DIM, min_similarity=0.5) as s:
        a = s.deposit("a", ["one"], unit(1)[None])
        d = s.deposit("b", ["uno"], near(unit(1), 2)[None], judge=judges.threshold(0.5))
        assert d.ids == a.ids and d.merged == [True]


def test_threshold_judge(store_path):
    with Store(store_path, dim=DIM, min_similarity=0.0, judge=judges.threshold(0.99)) as s:
        s.deposit("a", ["one"], unit(1)[None])
        assert s.deposit("b", ["other"], unit(2)[None]).merged == [False]
        assert s.deposit("c", ["one again"], unit(1)[None]).merged == [True]


def test_merge_into_record_of_same_deposit_links_once(store_path):
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5) as s:
        a = s.deposit("a", ["x1", "y1"], np.stack([unit(1), unit(2)]))
        d = s.deposit("b", ["x2", "y2", "z"], np.stack([near(unit(1), 1), near(unit(2), 2), unit(3)]))
        assert d.ids[:2] == a.ids and d.merged == [True, True, False]
        assert s.neighbors(a.ids[0]) == sorted([a.ids[1], d.ids[2]])
        assert s.stats().linked == 3


def test_keep_names_policy_never_drops_a_name(store_path):
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5, merge_policy="keep_names") as s:
        a = s.deposit("a", ["Laertes wounds Hamlet with the poisoned foil"], unit(1)[None])
        s.deposit("b", ["He wounds Hamlet"], near(unit(1), 2)[None])
        assert s.get(a.ids[0]).text == "Laertes wounds Hamlet with the poisoned foil"
        s.deposit("c", ["Laertes wounds Hamlet"], near(unit(1), 3)[None])
        assert s.get(a.ids[0]).text == "Laertes wounds Hamlet"
        logs = list(s.merges())
        assert [m.discarded for m in logs] == ["He wounds Hamlet", "Laertes wounds Hamlet with the poisoned foil"]


def test_policy_names():
    assert policies.capitalised_names("The King and Hamlet speak. He leaves.") == {"King", "Hamlet"}
    assert policies.keep_shorter("abc", "ab") == "ab" and policies.keep_shorter("ab", "xy") == "ab"
    with pytest.raises(ValueError, match="merge_policy"):
        policies.resolve("keep_longest")


def test_callable_policy_and_both_sides_logged(store_path):
    def joiner(existing, incoming):
        return existing + " / " + incoming

    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5, merge_policy=joiner) as s:
        a = s.deposit("a", ["alpha"], unit(1)[None])
        s.deposit("b", ["beta"], near(unit(1), 2)[None])
        assert s.get(a.ids[0]).text == "alpha / beta"
        assert sorted(m.discarded for m in s.merges()) == ["alpha", "beta"]


def test_bad_policy_result_writes_nothing(store_path):
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5, merge_policy=lambda a, b: "") as s:
        s.deposit("a", ["alpha"], unit(1)[None])
        before = snapshot(s)
        with pytest.raises(ValueError, match="merge policy"):
            s.deposit("b", ["beta"], near(unit(1), 2)[None])
        assert snapshot(s) == before


@pytest.mark.parametrize("per_item", [True, False])
def test_deposit_many_later_items_see_earlier_ones(store_path, per_item):
    judge = RecordingJudge(lambda st, c: st[-1] == c[-1])
    with Store(store_path, dim=DIM, judge=judge, min_similarity=0.5) as s:
        out = s.deposit_many(
            [
                ("alice", ["ghost appears 1", "night falls 2"], np.stack([unit(1), unit(2)])),
                ("bob", ["the ghost appears 1"], near(unit(1), 3)[None]),
                ("carol", ["A ghost appears 1", "NIGHT FALLS 2"], np.stack([near(unit(1), 4), unit(9)])),
            ],
            round=7,
            judge_per_item=per_item,
        )
        assert out[0].merged == [False, False]
        assert out[1].ids == [out[0].ids[0]] and out[1].merged == [True]
        assert out[2].ids == out[0].ids and out[2].merged == [True, True]
        # alice had nothing to compare against; carol's second statement is an
        # exact duplicate, so only her first is judged: one call for bob and
        # one for carol, in passes too (asking carol's request on a guess of
        # bob's verdict could cost three requests where one by one costs two)
        assert [[r.owner for r in c] for c in judge.calls] == [["bob"], ["carol"]]
        # staged candidates carry negative provisional ids
        assert all(c.id < 0 for c in judge.calls[0][0].candidates)
        rec = s.get(out[0].ids[0])
        assert rec.owners == frozenset({"alice", "bob", "carol"}) and rec.round == 7
        assert s.stats().deposits == 3


def test_deposit_many_is_all_or_nothing(store_path):
    with Store(store_path, dim=DIM) as s:
        s.deposit("a", ["x"], unit(1)[None])
        before = snapshot(s)
        with pytest.raises(ValueError, match=r"items\[1\]"):
            s.deposit_many([("a", ["fine"], unit(2)[None]), ("b", [""], unit(3)[None])])
        assert snapshot(s) == before
        assert s.deposit_many([]) == []


def test_adeposit_with_async_judge(store_path):
    async def judge(reqs):
        await asyncio.sleep(0)
        return [r.candidates[0].id for r in reqs]

    async def main():
        with Store(store_path, dim=DIM, min_similarity=0.5) as s:
            a = await s.adeposit("a", ["one"], unit(1)[None])
            b = await s.adeposit("b", ["uno"], near(unit(1), 2)[None], judge=judge)
            return a, b, s.get(a.ids[0]).owners

    a, b, owners = asyncio.run(main())
    assert b.ids == a.ids and b.merged == [True] and owners == frozenset({"a", "b"})


def test_sync_deposit_refuses_coroutine_judge(store_path):
    async def judge(reqs):
        return [None] * len(reqs)

    with Store(store_path, dim=DIM, min_similarity=0.5) as s:
        s.deposit("a", ["one"], unit(1)[None])
        with pytest.raises(TypeError, match="adeposit"):
            s.deposit("b", ["uno"], near(unit(1), 2)[None], judge=judge)


def test_embed_path(store_path):
    from agentsensus.embedders import HashEmbedder

    emb = HashEmbedder(64)
    with Store(store_path, embed=emb, judge=judges.threshold(0.8), min_similarity=0.8) as s:
        a = s.deposit("horatio", ["The ghost walks on the platform at midnight"])
        b = s.deposit("marcellus", ["the ghost walks on the platform at midnight tonight"])
        assert b.ids == a.ids
        hits = s.recall("marcellus", "ghost on the platform")
        assert hits and hits[0].id == a.ids[0]


def test_concurrent_writers_in_threads_do_not_lose_merges(store_path):
    # Threads race through prepare/judge/commit; the commit re-check makes the
    # later writer merge instead of creating a duplicate.
    import threading

    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5) as s:
        barrier = threading.Barrier(4)

        def witness(name):
            barrier.wait()
            s.deposit(name, [f"the event, as {name} saw it"], near(unit(1), hash(name) % 100)[None])

        ts = [threading.Thread(target=witness, args=(f"w{i}",)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        st = s.stats()
        assert st.records == 1 and st.max_owners == 4


def test_the_judge_sees_candidates_owners_only_when_the_store_allows_it(tmp_path):
    for allowed, owners in ((False, frozenset()), (True, frozenset({"alice"}))):
        judge = RecordingJudge()
        with Store(
            str(tmp_path / f"s{allowed}"), dim=DIM, judge=judge, min_similarity=0.9, judge_sees_owners=allowed
        ) as s:
            s.deposit("alice", ["one"], unit(1)[None])
            s.deposit("bob", ["uno"], near(unit(1), 5)[None])
        [[req]] = judge.calls
        assert req.candidates[0].owners == owners
    with pytest.raises(TypeError, match="judge_sees_owners must be a bool"):
        Store(str(tmp_path / "bad"), dim=DIM, judge_sees_owners="yes")
