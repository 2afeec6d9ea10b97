"""A scope's lexical scores are its own (lex_postings per scope, I18, I20):
the BM25 statistics an owner's scores are computed from (record count, mean
length, a word's record count) are those of the owner's scope, so no score
moves with another scope's records, on a real store on disk. Verify, repair,
compact and export/import keep the per-scope statistics."""

from __future__ import annotations

import io
import os
from typing import Optional

import numpy as np
import pytest
from agentsensus import Store
from agentsensus.io.compact import compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, RecordingJudge, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lexical_index import expected_postings, expected_stats, lexical_stats, postings, with_table

A = np.eye(DIM, dtype=np.float32)[0]
B = np.eye(DIM, dtype=np.float32)[1]
MINE = ["zanzibar is where the ship docks", "the cargo waits in the harbour", "a storm delays the crossing"]
QUERY = "I heard the zanzibar ship is late"


def embed(texts: list[str]) -> np.ndarray:
    """One vector for every text: recall's vector ranking is by id alone."""
    return np.stack([A] * len(texts))


embed.dim = DIM  # type: ignore[attr-defined]


def mallory_scores(path: str, others: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
    """mallory's lexical scores in scope "m" after the others' records
    (scope, text) are deposited: those of the candidates her deposit of
    QUERY shows the judge, and those of her fused recall of QUERY."""
    judge = RecordingJudge()
    with Store(path, dim=DIM, embed=embed, min_similarity=0.5, judge=judge) as s:
        s.deposit("mallory", MINE[:2], np.stack([A, A]), scope="m")
        for i, (scope, text) in enumerate(others):
            s.deposit("alice", [text], unit(i % (DIM - 3) + 3)[None], scope=scope)
        s.deposit("mallory", MINE[2:], A[None], scope="m")
        judge.calls.clear()
        s.deposit("mallory", [QUERY], B[None], scope="m")
        candidates = [c.lexical_score for call in judge.calls for r in call for c in r.candidates]
        recalled = [m.lexical_score for m in s.recall("mallory", QUERY, k=3, lexical=True, expand=False)]
        assert s.verify() == []
    return candidates, recalled


def test_another_scopes_records_do_not_move_a_lexical_score(tmp_path):
    alone = mallory_scores(os.fspath(tmp_path / "alone"), [])
    crowded = mallory_scores(os.fspath(tmp_path / "crowded"), [("a", f"zanzibar report {i}") for i in range(20)])
    assert alone[0] and alone[1] and all(x > 0 for x in alone[0])
    assert crowded == alone  # exactly equal floats: the statistics are scope "m"'s alone


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    others=st.lists(
        st.tuples(
            st.sampled_from(["", "a", "b"]),
            st.lists(
                st.sampled_from(["zanzibar", "ship", "the", "harbour", "storm", "gold", "7"]), min_size=1, max_size=8
            ),
        ),
        max_size=12,
    )
)
def test_no_other_scope_contents_move_a_lexical_score(tmp_path_factory, others):
    texts = [(scope, " ".join(ws) + f" note {i}") for i, (scope, ws) in enumerate(others)]
    alone = mallory_scores(os.fspath(tmp_path_factory.mktemp("alone")), [])
    assert mallory_scores(os.fspath(tmp_path_factory.mktemp("crowded")), texts) == alone


def scoped_texts(path: str) -> tuple[dict[int, str], dict[int, int]]:
    """A store's records' texts and scope ids (scope ids as first used: "" is 0)."""
    ids = {"": 0}
    with Store(path) as s:
        texts = {m.id: m.text for m in s.records()}
        names = {rid: s.scope_of(rid) for rid in texts}
        for name in s.scopes():
            ids.setdefault(name, len(ids))
    return texts, {rid: ids[name] for rid, name in names.items()}


def scoped_store(path: str) -> None:
    with Store(path, dim=DIM, min_similarity=0.5) as s:
        s.deposit("mallory", ["zanzibar is where the ship docks"], A[None], scope="m")
        s.deposit("alice", ["zanzibar gold", "the storm"], np.stack([unit(3), unit(4)]), scope="a")
        s.deposit("bob", ["plain words here"], unit(5)[None])


def test_the_statistics_rows_count_each_scopes_records_and_words(tmp_path):
    path = os.fspath(tmp_path / "s")
    scoped_store(path)
    with Store(path) as s:
        s.forget("alice", 3)  # "the storm" goes, and its words leave scope "a"'s statistics
        assert s.verify() == []
    texts, scopes = scoped_texts(path)
    assert postings(path) == expected_postings(texts, scopes)
    assert lexical_stats(path) == expected_stats(texts, scopes) == {0: (1, 3), 1: (1, 6), 2: (1, 2)}


def damage_stats(path: str, scope: int, value: Optional[bytes]) -> None:
    def put(t, db):
        t.delete(scope.to_bytes(4, "big"), db=db)
        if value is not None:
            t.put(scope.to_bytes(4, "big"), value, db=db)

    with_table(path, put)


def test_verify_reports_wrong_or_missing_statistics_and_repair_rebuilds_them(tmp_path):
    path = os.fspath(tmp_path / "s")
    scoped_store(path)
    damage_stats(path, 2, (9).to_bytes(8, "little") + (4).to_bytes(8, "little"))
    damage_stats(path, 1, None)
    damage_stats(path, 7, (1).to_bytes(8, "little") + (1).to_bytes(8, "little"))
    with Store(path) as s:
        problems = s.verify()
        assert any("statistics of scope 2 (9 records, 4 words) disagree with its records (2, 4)" in p for p in problems)
        assert any("scope 1 has no lexical statistics for its 1 records" in p for p in problems), problems
        assert any("statistics of scope 7 (1 records, 1 words) disagree with its records (0, 0)" in p for p in problems)
        s.repair()
        assert s.verify() == []
    texts, scopes = scoped_texts(path)
    assert lexical_stats(path) == expected_stats(texts, scopes)


def test_compact_and_export_import_keep_the_statistics(tmp_path):
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    scoped_store(src)
    before = lexical_stats(src), postings(src)
    compact(src)
    assert (lexical_stats(src), postings(src)) == before
    out = io.StringIO()
    with Store(src) as s:
        export_jsonl(s, out)
    import_jsonl(io.StringIO(out.getvalue()), dst)
    texts, scopes = scoped_texts(dst)
    assert (lexical_stats(dst), postings(dst)) == (expected_stats(texts, scopes), expected_postings(texts, scopes))
    with Store(dst) as s:
        assert s.verify() == []
