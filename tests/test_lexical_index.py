"""The lexical index (lex_postings, I18) on real stores: the judge sees a
candidate only its words find; verify, repair, compact, export/import,
forget and the upgrade of a store from before the index keep it equal to
the words of the live records."""

from __future__ import annotations

import io
import os
import re
from typing import Optional

import lmdb
import numpy as np
import pytest
from agentsensus import Store
from agentsensus.errors import Error
from agentsensus.io.compact import compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, RecordingJudge, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Two vectors at right angles: no vector search at min_similarity 0.5 pairs them.
A = np.eye(DIM, dtype=np.float32)[0]
B = np.eye(DIM, dtype=np.float32)[1]
STORED = "Polonius hides behind the arras in the queen's closet"
HEARD = "I heard Horatio say that Polonius hides behind the arras"


def words(text: str) -> list[bytes]:
    """The engine's word rules (cpp/src/lexical/lexical_index.hpp), written again: runs of
    ASCII letters and digits and of non-ASCII bytes, at least 2 bytes,
    or a single digit, ASCII lowercased, cut at 64 bytes."""
    runs = re.findall(rb"[A-Za-z0-9\x80-\xff]+", text.encode("utf-8"))
    return [r.lower()[:64] for r in runs if len(r) >= 2 or r.isdigit()]


M64 = (1 << 64) - 1


def checksum64(data: bytes) -> int:
    """cpp/src/format/checksum.hpp's checksum64, written again."""
    p1, p2 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & M64

    def rnd(acc: int, w: int) -> int:
        return rotl((acc + w * p2) & M64, 31) * p1 & M64

    lanes = [(p1 + p2) & M64, p2, 0, (-p1) & M64]
    i, n = 0, len(data)
    while i + 32 <= n:
        for j in range(4):
            lanes[j] = rnd(lanes[j], int.from_bytes(data[i + 8 * j : i + 8 * j + 8], "little"))
        i += 32
    h = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18)) & M64
    while i + 8 <= n:
        h = rotl(h ^ rnd(0, int.from_bytes(data[i : i + 8], "little")), 27) * p1 & M64
        i += 8
    while i < n:
        h = rotl(h ^ (data[i] * p1 & M64), 11) * p2 & M64
        i += 1
    h ^= n
    h ^= h >> 33
    h = h * p2 & M64
    h ^= h >> 29
    return h


def digest(word: bytes) -> bytes:
    """The 16 bytes a word is keyed by (word_digest, cpp/src/lexical/lexical_index.hpp)."""
    return b"".join(checksum64(bytes([lead]) + word).to_bytes(8, "little") for lead in (1, 2))


def key(word: bytes, scope: int = 0) -> bytes:
    """A posting's key in lex_postings: [Be32 scope id][the word's digest]."""
    return scope.to_bytes(4, "big") + digest(word)


def postings(path: str) -> set[tuple[int, bytes, int, int, int]]:
    """Every (scope id, word digest, record, count, length) in a closed store's lex_postings."""
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=64)
    db = env.open_db(b"lex_postings", create=False, dupsort=True, dupfixed=True)
    out = set()
    with env.begin() as t:
        for k, v in t.cursor(db):
            if len(k) == 4:  # a scope's statistics row (lexical_stats)
                continue
            out.add(
                (
                    int.from_bytes(k[:4], "big"),
                    bytes(k[4:]),
                    int.from_bytes(v[:8], "big"),
                    int.from_bytes(v[8:12], "little"),
                    int.from_bytes(v[12:16], "little"),
                )
            )
    env.close()
    return out


def lexical_stats(path: str) -> dict[int, tuple[int, int]]:
    """Each scope id's (records, words) statistics row in a closed store's lex_postings."""
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=64)
    db = env.open_db(b"lex_postings", create=False, dupsort=True, dupfixed=True)
    with env.begin() as t:
        out = {
            int.from_bytes(k, "big"): (int.from_bytes(v[:8], "little"), int.from_bytes(v[8:], "little"))
            for k, v in t.cursor(db)
            if len(k) == 4
        }
    env.close()
    return out


def expected_postings(
    texts: dict[int, str], scopes: Optional[dict[int, int]] = None
) -> set[tuple[int, bytes, int, int, int]]:
    """The postings of records with these texts, in these scope ids (default 0)."""
    scopes = scopes or {}
    out = set()
    for rid, text in texts.items():
        ws = words(text)
        for w in set(ws):
            out.add((scopes.get(rid, 0), digest(w), rid, ws.count(w), len(ws)))
    return out


def expected_stats(texts: dict[int, str], scopes: Optional[dict[int, int]] = None) -> dict[int, tuple[int, int]]:
    """The statistics rows of records with these texts, in these scope ids (default 0)."""
    scopes = scopes or {}
    out: dict[int, tuple[int, int]] = {}
    for rid, text in texts.items():
        docs, n = out.get(scopes.get(rid, 0), (0, 0))
        out[scopes.get(rid, 0)] = (docs + 1, n + len(words(text)))
    return out


def with_table(path: str, fn, table: bytes = b"lex_postings") -> None:
    env = lmdb.open(path, max_dbs=64)
    db = env.open_db(table, create=False, dupsort=table == b"lex_postings", dupfixed=table == b"lex_postings")
    with env.begin(write=True, db=db) as t:
        fn(t, db)
    env.close()


def store_with_one(path: str, **kw) -> Store:
    s = Store(path, dim=DIM, min_similarity=0.5, **kw)
    s.deposit("a", [STORED], A[None])
    return s


def test_a_candidate_only_its_words_find_reaches_the_judge_with_both_scores(tmp_path):
    judge = RecordingJudge(lambda stmt, cand: "Polonius" in stmt and "Polonius" in cand)
    with store_with_one(str(tmp_path / "s"), judge=judge) as s:
        d = s.deposit("b", [HEARD], B[None])
        assert d.merged == [True] and d.ids == [1]
        (req,) = judge.calls[0]
        (cand,) = req.candidates
        assert cand.id == 1 and cand.score == pytest.approx(float(A @ B)) and cand.lexical_score > 0
        assert s.get(1).owners == {"a", "b"}


def test_vector_candidates_carry_their_lexical_score_and_come_first(tmp_path):
    judge = RecordingJudge()
    # lexical_floor=0: every word weighs, "the" too (the floor is tested in test_lexical_floor.py)
    with Store(str(tmp_path / "s"), dim=DIM, min_similarity=0.5, lexical_floor=0, judge=judge) as s:
        s.deposit("a", ["the arras hides Polonius", "a ghost walks the battlements"], np.stack([A, B]))
        s.deposit("b", ["a ghost on the battlements at night"], A[None])  # near record 1's vector only
        (req,) = judge.calls[0]
        assert [c.id for c in req.candidates] == [1, 2]  # the vector one, then the lexical one
        assert req.candidates[0].score == pytest.approx(1.0) and req.candidates[0].lexical_score > 0  # "the"
        assert req.candidates[1].lexical_score > req.candidates[0].lexical_score


def test_a_lexical_hit_already_among_the_vector_candidates_leaves_its_place_to_the_next(tmp_path):
    judge = RecordingJudge()
    # lexical_floor=0: "ghost", which both records hold, still weighs
    with Store(
        str(tmp_path / "s"),
        dim=DIM,
        min_similarity=0.5,
        candidates=1,
        lexical_candidates=1,
        lexical_floor=0,
        judge=judge,
    ) as s:
        s.deposit("a", ["ghost walks the battlements", "ghost at midnight"], np.stack([A, B]))
        s.deposit("b", ["a ghost walks the battlements"], A[None])
        (req,) = judge.calls[0]
        # record 1 is first by vector and by words; the lexical place goes to record 2
        assert [c.id for c in req.candidates] == [1, 2]
        assert req.candidates[0].lexical_score > req.candidates[1].lexical_score > 0


def test_a_lone_digit_is_a_word(tmp_path):
    judge = RecordingJudge()
    with Store(str(tmp_path / "s"), dim=DIM, min_similarity=0.5, lexical_candidates=1, judge=judge) as s:
        s.deposit("a", ["On day 3 the ghost walks", "On day 4 the ghost walks"], np.stack([A, B]))
        s.deposit("b", ["the ghost walks again on day 4"], unit(7)[None])
        (req,) = judge.calls[0]
        assert [c.id for c in req.candidates] == [2]
        assert words("day 4, I think") == [b"day", b"4", b"think"]


def test_an_index_of_older_word_rules_is_rebuilt_on_a_writable_open(tmp_path):
    path = str(tmp_path / "s")
    with Store(path, dim=DIM, min_similarity=0.5) as s:
        s.deposit("a", ["In scene 5 the ghost walks"], A[None])
    env = lmdb.open(path, max_dbs=64)  # as version 1 of the word rules left it: no lone digits
    db = env.open_db(b"lex_postings", create=False, dupsort=True, dupfixed=True)
    with env.begin(write=True) as t:
        t.delete(key(b"5"), db=db)
        t.put(b"lexical", (1).to_bytes(8, "little"), db=env.open_db(b"meta", txn=t, create=False))
    env.close()
    with Store(path, readonly=True, embed=lambda ts: np.stack([A] * len(ts))) as s:
        assert any("another version" in p for p in s.verify())
    with Store(path, min_similarity=0.5) as s:
        assert s.verify() == []
        texts = {m.id: m.text for m in s.records()}
    assert (0, digest(b"5"), 1, 1, 6) in postings(path) == expected_postings(texts)
    assert lexical_stats(path) == expected_stats(texts) == {0: (1, 6)}


def test_lexical_candidates_0_turns_them_off(tmp_path):
    judge = RecordingJudge(lambda a, b: True)
    with store_with_one(str(tmp_path / "s"), judge=judge, lexical_candidates=0) as s:
        assert s.deposit("b", [HEARD], B[None]).merged == [False]
        assert judge.calls == []


def test_bad_lexical_candidates_is_refused_with_nothing_written(tmp_path):
    for bad in (-1, 1.5, True, "8"):
        with pytest.raises(ValueError, match="lexical_candidates must be an int >= 0"):
            Store(str(tmp_path / "s"), dim=DIM, lexical_candidates=bad)
    assert not os.path.exists(tmp_path / "s")


def test_verify_reports_a_damaged_posting_and_repair_rebuilds_it(tmp_path):
    path = str(tmp_path / "s")
    store_with_one(path).close()

    def damage(t, db):
        c = t.cursor(db)
        assert c.set_key(key(b"polonius"))
        v = bytearray(c.value())
        v[8] ^= 0x7F  # the word's count
        c.delete()
        t.put(key(b"polonius"), bytes(v), db=db)

    with_table(path, damage)
    judge = RecordingJudge(lambda a, b: True)
    with Store(path, min_similarity=0.5, judge=judge) as s:
        problems = s.verify()
        assert any("lacks its lexical posting for 'polonius'" in p for p in problems), problems
        s.repair()
        assert s.verify() == []
        assert s.deposit("b", [HEARD], B[None]).ids == [1]
        texts = {m.id: m.text for m in s.records()}  # the merge policy chose the record's text
    assert postings(path) == expected_postings(texts)


def test_verify_reports_a_stray_posting(tmp_path):
    path = str(tmp_path / "s")
    store_with_one(path).close()
    with_table(path, lambda t, db: t.put(key(b"ghost"), (99).to_bytes(8, "big") + b"\x01\0\0\0\x05\0\0\0", db=db))
    with Store(path) as s:
        problems = s.verify()
        assert any(f"word digest {digest(b'ghost').hex()} is damaged or names no live record" in p for p in problems)
        n = len(set(words(STORED)))
        assert any(f"holds {n + 1} postings for {n} words" in p for p in problems), problems


def test_merge_and_forget_keep_the_postings_equal_to_the_texts(tmp_path):
    path = str(tmp_path / "s")
    with store_with_one(path, judge=RecordingJudge(lambda a, b: True), merge_policy="keep_shorter") as s:
        s.deposit("b", ["Polonius hides behind the arras"], B[None])  # shorter: the record takes it
        assert s.get(1).text == "Polonius hides behind the arras"
        s.deposit("c", ["Ophelia drowns in the brook"], unit(7)[None], judge=RecordingJudge())
        s.forget("c", 2)  # its only owner: the record goes, with its postings
        assert s.verify() == []
        texts = {m.id: m.text for m in s.records()}
    assert texts == {1: "Polonius hides behind the arras"}
    assert postings(path) == expected_postings(texts)


def test_compact_keeps_the_index(tmp_path):
    path = str(tmp_path / "s")
    store_with_one(path).close()
    before = postings(path)
    compact(path)
    assert postings(path) == before
    judge = RecordingJudge(lambda a, b: True)
    with Store(path, min_similarity=0.5, judge=judge) as s:
        assert s.verify() == []
        assert s.deposit("b", [HEARD], B[None]).merged == [True]


def test_import_builds_the_index_as_it_loads(tmp_path):
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    with store_with_one(src) as s:
        s.deposit("c", ["Laertes returns from France"], unit(3)[None])
        out = io.StringIO()
        export_jsonl(s, out)
    import_jsonl(io.StringIO(out.getvalue()), dst)
    assert postings(dst) == postings(src)
    judge = RecordingJudge(lambda a, b: "Polonius" in a and "Polonius" in b)
    with Store(dst, min_similarity=0.5, judge=judge) as s:
        assert s.verify() == []
        assert s.deposit("b", [HEARD], B[None]).ids == [1]


def test_a_store_from_before_the_index_gains_it_on_a_writable_open(tmp_path):
    path = str(tmp_path / "s")
    store_with_one(path).close()
    env = lmdb.open(path, max_dbs=64)  # as schema 2 left it: no table, no meta keys
    with env.begin(write=True) as t:
        t.drop(env.open_db(b"lex_postings", txn=t, create=False), delete=True)
        meta = env.open_db(b"meta", txn=t, create=False)
        t.delete(b"lexical", db=meta)
        t.delete(b"lex_words", db=meta)
    env.close()
    with Store(path, readonly=True, embed=lambda ts: np.stack([A] * len(ts))) as s:  # no index to read, none made
        assert s.verify() == []
        assert [m.id for m in s.recall("a", "arras")] == [1]
        with pytest.raises(Error, match="no lexical index yet"):
            s.recall("a", "arras", lexical=True)
    judge = RecordingJudge(lambda a, b: True)
    with Store(path, min_similarity=0.5, judge=judge) as s:
        assert s.verify() == []
        assert s.deposit("b", [HEARD], B[None]).merged == [True]
        texts = {m.id: m.text for m in s.records()}
    assert postings(path) == expected_postings(texts)


def test_recall_lexical_fuses_the_two_rankings(tmp_path):
    texts = ["Polonius hides behind an arras", "Ophelia sings of rosemary", "a ghost walks at midnight"]

    def embed(ts):  # one vector for every text: the vector ranking is by id alone
        return np.stack([A] * len(ts))

    embed.dim = DIM  # type: ignore[attr-defined]
    with Store(str(tmp_path / "s"), embed=embed, judge=RecordingJudge(), lexical_candidates=0) as s:
        for t in texts:
            s.deposit("a", [t])
        s.deposit("z", ["a ghost again, owned by another"])
        assert [m.id for m in s.recall("a", "where does a ghost walk", k=2, expand=False)] == [1, 2]
        hits = s.recall("a", "where does a ghost walk", k=2, lexical=True, expand=False)
        # record 3 is third by vector and first by words: 1/63 + 1/61 beats record 1's 1/61
        assert [m.id for m in hits] == [3, 1]
        assert hits[0].lexical_score > 0 and hits[1].lexical_score == 0.0
        assert hits[0].score == pytest.approx(1.0) and hits[0].via == "hit"
        with pytest.raises(TypeError, match="needs the query as a str"):
            s.recall("a", A, lexical=True)
        with pytest.raises(ValueError, match="no where= or threshold="):
            s.recall("a", "ghost", lexical=True, threshold=0.5)


# Every text is made of these words, so merges and forgets keep hitting the same postings.
VOCAB = ["Polonius", "arras", "ghost", "the", "of", "Ophelia", "brook", "x", "König", "duel", "sword"]
sentences = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6).map(" ".join)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("deposit"), st.sampled_from("abc"), st.lists(sentences, min_size=1, max_size=3)),
        st.tuples(st.just("forget"), st.sampled_from("abc"), st.integers(0, 30)),
        st.tuples(st.just("delete"), st.integers(0, 30)),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_the_index_equals_one_rebuilt_from_the_live_records(tmp_path_factory, steps):
    path = str(tmp_path_factory.mktemp("lex") / "s")

    def judge(requests):  # merges into the first candidate sharing a word: texts change, postings follow
        out = []
        for r in requests:
            mine = set(words(r.statement))
            out.append(next((c.id for c in r.candidates if mine & set(words(c.text))), None))
        return out

    with Store(path, dim=DIM, min_similarity=0.9, judge=judge) as s:
        seed = 0
        for step in steps:
            live = sorted(m.id for m in s.records())
            if step[0] == "deposit":
                _, owner, texts = step
                seed += 1
                vecs = np.stack([unit(seed * 10 + i) for i in range(len(texts))])
                s.deposit(owner, texts, vecs)
            elif step[0] == "forget" and live:
                _, owner, n = step
                rid = live[n % len(live)]
                if owner in s.get(rid).owners:
                    s.forget(owner, rid)
            elif step[0] == "delete" and live:
                rid = live[step[1] % len(live)]
                for owner in sorted(s.get(rid).owners):
                    s.forget(owner, rid)
        texts = {m.id: m.text for m in s.records()}
        assert s.verify() == []
    assert postings(path) == expected_postings(texts)
