"""recall(lexical=True) returns the same Memory fields as vector recall and
get: the reading owner's metadata, the record's times, owners, round and
via, on a real store with shared, updated and linked records."""

from __future__ import annotations

import zlib
from dataclasses import fields

import numpy as np
from agentsensus import Store
from helpers import DIM, RecordingJudge, unit

TEXTS = [
    "the deploy is on friday at noon",
    "lunch was pasta with the team",
    "the deploy needs the database migrated first",
    "friday standup moved to ten",
]


def embed(texts: list[str]) -> np.ndarray:
    """A fixed unit vector per text (its crc32 as the seed)."""
    return np.stack([unit(zlib.crc32(t.encode())) for t in texts])


embed.dim = DIM  # type: ignore[attr-defined]


def test_fused_recall_carries_every_field_of_vector_recall(tmp_path):
    with Store(str(tmp_path / "s"), embed=embed, judge=RecordingJudge()) as s:
        for n, t in enumerate(TEXTS):
            s.deposit("a", [t], round=n + 1, metadata={"n": n, "topic": t.split()[1]})
        # shared: b says the same words (its own metadata), a reads its own
        s.deposit("b", [TEXTS[0]], round=7, metadata={"by": "b"})
        # rewritten in place: updated_at moves past created_at, metadata replaced
        s.update(3, "the deploy needs the schema migrated first", owner="a", round=9, metadata={"n": 99})
        query = "when is the deploy on friday"
        for expand in (False, True):
            fused = s.recall("a", query, k=4, lexical=True, expand=expand)
            by_vector = {m.id: m for m in s.recall("a", query, k=4, expand=expand)}
            assert {m.id for m in fused} == {1, 2, 3, 4}
            for m in fused:
                got = s.get(m.id, owner="a")
                assert m.metadata is not None and m.created_at is not None and m.updated_at is not None
                # every field but the scores and via is the record's, as get reads it
                for f in ("id", "text", "owners", "round", "metadata", "created_at", "updated_at"):
                    assert getattr(m, f) == getattr(got, f), f
                # and as vector recall gives it, scores apart
                v = by_vector[m.id]
                for f in fields(m):
                    if f.name not in ("score", "lexical_score"):
                        assert getattr(m, f.name) == getattr(v, f.name), f.name
                assert m.via == "hit" and m.score is not None and m.lexical_score is not None
        shared = s.recall("a", query, k=4, lexical=True)
        first = next(m for m in shared if m.id == 1)
        assert first.owners == frozenset({"a", "b"}) and first.metadata == {"n": 0, "topic": "deploy"}
        assert s.recall("b", query, k=1, lexical=True)[0].metadata == {"by": "b"}
        updated = next(m for m in shared if m.id == 3)
        assert updated.metadata == {"n": 99} and updated.updated_at > updated.created_at


def test_a_record_rewritten_between_ranking_and_fields_is_ranked_again(tmp_path):
    from agentsensus._store.lexical_recall import fused_recall

    with Store(str(tmp_path / "s"), embed=embed, judge=RecordingJudge()) as s:
        for t in TEXTS:
            s.deposit("a", [t], metadata={"v": 1})
        engine = s._handles().engine
        calls = []

        class RewritesOnce:
            """The real engine; its first fused ranking is followed by a real update."""

            def recall_fused(self, *args):
                rows = engine.recall_fused(*args)
                if not calls:
                    s.update(1, "the deploy is on friday at one", owner="a", metadata={"v": 2})
                calls.append(len(rows))
                return rows

            def get_meta(self, *args):
                return engine.get_meta(*args)

            def versions_of(self, *args):
                return engine.versions_of(*args)

        got = fused_recall(s, RewritesOnce(), "a", "when is the deploy", 4, False, None, None)
        assert len(calls) == 2  # the first ranking's text of record 1 was stale
        first = next(m for m in got if m.id == 1)
        assert first.text == "the deploy is on friday at one" and first.metadata == {"v": 2}
