"""The word counts a store handle remembers between lexical calls
(cpp/src/lexical/posting_counts.hpp) are always the snapshot's: after this
handle's own deposits, forgets and updates, and after another process's
writes in between, every word's count of records equals the count of the
live texts that hold it, and the deposit path's candidates follow. Counts
carried across this handle's own commits are moved by what each commit
added and removed, also when a batch moves one word several times and when
a write is retried after the map grew."""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest
from agentsensus import Store, judges
from helpers import DIM, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = ["alpha", "beta", "gamma", "delta", "omega"]
PROBE = " ".join(WORDS)


def _writer(path: str, conn: Any) -> None:
    # Another process's handle: deposits or forgets as told, answers with the ids.
    with Store(path, dim=DIM, judge=judges.never, sync=False) as s:
        for _ in range(100):  # bounded: the test sends far fewer commands
            cmd = conn.recv()
            if cmd is None:
                break
            op, arg, seed = cmd
            if op == "deposit":
                conn.send(s.deposit("other", [arg], unit(seed)[None]).ids)
            else:
                s.forget("other", arg)
                conn.send([])


def _counts(s: Store) -> tuple[float, dict[str, float]]:
    docs, _, (words,) = s._engine.lexical_word_counts([PROBE], [], "")
    return docs, {w.decode(): df for w, _, df in words}


def _expected(live: dict[int, str]) -> tuple[float, dict[str, float]]:
    return float(len(live)), {w: float(sum(w in t.split() for t in live.values())) for w in WORDS}


def test_remembered_counts_follow_own_and_other_writers(tmp_path):
    path = str(tmp_path / "s")
    live: dict[int, str] = {}  # record id -> text, every writer's
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    shown: list[str] = []  # every candidate the judge was shown

    def judge(requests: list[Any]) -> list[Any]:
        shown.extend(c.text for r in requests for c in r.candidates)
        return [None] * len(requests)

    with Store(path, dim=DIM, judge=judge, sync=False) as s:
        (first,) = s.deposit("me", ["alpha beta seed"], unit(0)[None]).ids
        live[first] = "alpha beta seed"
        proc = ctx.Process(target=_writer, args=(path, child))
        proc.start()
        try:
            steps = [
                ("me", "deposit", "alpha gamma one"),
                ("other", "deposit", "alpha delta two"),
                ("me", "deposit", "beta three"),
                ("me", "deposit", "omega four"),
                ("other", "deposit", "gamma omega five"),
                ("me", "forget", None),
                ("me", "update", "delta six"),
                ("other", "forget", None),
                ("me", "deposit", "alpha beta gamma seven"),
                ("other", "deposit", "alpha eight"),
                ("me", "deposit", "delta nine"),
            ]
            for n, (who, op, text) in enumerate(steps):
                assert _counts(s) == _expected(live), f"before step {n}"  # remembered here
                mine = [i for i in live if s.get(i).owners == frozenset({"me"})]
                theirs = [i for i in live if s.get(i).owners == frozenset({"other"})]
                if who == "me" and op == "deposit":
                    (rid,) = s.deposit("me", [text], unit(100 + n)[None]).ids
                    live[rid] = text
                elif who == "me" and op == "forget":
                    s.forget("me", mine[0])
                    del live[mine[0]]
                elif who == "me":
                    rid = s.update(mine[-1], text, owner="me", vector=unit(200 + n))  # in place: only "me" owns it
                    del live[mine[-1]]
                    live[rid] = text
                elif op == "deposit":
                    parent.send(("deposit", text, 300 + n))
                    (rid,) = parent.recv()
                    live[rid] = text
                else:
                    parent.send(("forget", theirs[0], 0))
                    parent.recv()
                    del live[theirs[0]]
                assert _counts(s) == _expected(live), f"after step {n} ({who} {op})"
            # The deposit path reads the same counts: a statement sharing its
            # words with one record meets that record as a candidate.
            shown.clear()
            s.deposit("me", ["alpha beta gamma seven again"], unit(999)[None])
            assert "alpha beta gamma seven" in shown
        finally:
            parent.send(None)
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
        assert proc.exitcode == 0


VOCAB = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
# one operation: ("deposit", [word indexes of each statement]), ("forget", which), ("update", which, words)
ops = st.one_of(
    st.tuples(
        st.just("deposit"), st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4), min_size=1, max_size=6)
    ),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("update"), st.integers(0, 50), st.lists(st.integers(0, 5), min_size=1, max_size=4)),
)


@pytest.mark.slow  # a store per example
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(ops, min_size=1, max_size=8))
def test_counts_move_with_batches_updates_and_a_growing_map(tmp_path_factory, steps):
    # The smallest map: early writes fill it, so write transactions are
    # retried after the map grows, and the moves of an attempt that did not
    # commit must not count. A batch's statements share words: one commit
    # moves a word's count by several.
    path = str(tmp_path_factory.mktemp("s") / "s")
    live: dict[int, str] = {}
    made = 0
    with Store(path, dim=DIM, judge=judges.never, sync=False, map_size=1 << 16) as s:
        for op in steps:
            if op[0] == "deposit":
                items = []
                for words in op[1]:
                    made += 1
                    items.append(("me", [" ".join(VOCAB[w] for w in words) + f" t{made}"], unit(made)[None]))
                for (_, (text,), _), res in zip(items, s.deposit_many(items)):
                    (rid,) = res.ids
                    live[rid] = text
            elif live and op[0] == "forget":
                rid = sorted(live)[op[1] % len(live)]
                s.forget("me", rid)
                del live[rid]
            elif live:
                made += 1
                rid = sorted(live)[op[1] % len(live)]
                text = " ".join(VOCAB[w] for w in op[2]) + f" t{made}"
                new = s.update(rid, text, owner="me", vector=unit(made))
                del live[rid]
                live[new] = text
            docs, counts = _counts_of(s, VOCAB)
            assert docs == float(len(live))
            assert counts == {w: float(sum(w in t.split() for t in live.values())) for w in VOCAB}


def _counts_of(s: Store, words: list[str]) -> tuple[float, dict[str, float]]:
    docs, _, (got,) = s._engine.lexical_word_counts([" ".join(words)], [], "")
    return docs, {w.decode(): df for w, _, df in got}
