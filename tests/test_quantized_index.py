"""The int8 graph of a cos store: candidates ranked by int8 vectors, scores
re-scored from LMDB's f32, so what comes back is exactly what an exact scan
over the same records gives."""

from __future__ import annotations

import os

import numpy as np
import pytest
from agentsensus import Store, judges
from agentsensus._store.normalize import text_digest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DIM = 16


def clustered(n: int, seed: int, spread: float) -> np.ndarray:
    """n unit vectors around 3 centres: near-ties that int8 rounding reorders."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((3, DIM)).astype(np.float32)
    v = centres[rng.integers(0, 3, n)] + spread * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def build(path: str, vs: np.ndarray) -> list[int]:
    with Store(path, dim=DIM, judge=judges.never, sync=False) as s:
        return [s.deposit("a", [f"r{i}"], vs[i : i + 1]).ids[0] for i in range(len(vs))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 60),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.02, 0.2, 1.0]),
    k=st.integers(1, 10),
)
def test_graph_candidates_are_the_exact_nearest(tmp_path_factory, n, seed, spread, k):
    """exact_cutoff=0 sends prepare through the graph; a store of at most
    expansion_search records is all candidates, so the re-scored best k are
    the exact best k (ties to the lower id) with the f32 scores."""
    path = os.fspath(tmp_path_factory.mktemp("q"))
    vs = clustered(n, seed, spread)
    ids = build(path, vs)
    qs = clustered(4, seed + 1, spread)
    with Store(path, exact_cutoff=0, judge=judges.never) as s:
        digests = b"".join(text_digest(f"query {j}") for j in range(len(qs)))
        _, _, offsets, got_ids, got_scores, *_ = s._handles().engine.prepare(qs, digests, k, -2.0)
    for j, q in enumerate(qs):
        exact = vs @ q
        order = sorted(range(n), key=lambda i: (-float(exact[i]), ids[i]))[:k]
        lo, hi = offsets[j], offsets[j + 1]
        assert list(got_ids[lo:hi]) == [ids[i] for i in order]
        np.testing.assert_allclose(got_scores[lo:hi], exact[order], rtol=0, atol=1e-5)


@pytest.mark.slow
def test_a_quantized_store_verifies_and_holds_a_quarter_of_the_vector_bytes(tmp_path):
    """verify (I11) accepts the int8 rounding and nothing more; the saved
    index is far below the f32 bytes of its vectors."""
    path = os.fspath(tmp_path / "s")
    n, dim = 3000, 384
    vs = np.random.default_rng(3).standard_normal((n, dim)).astype(np.float32)
    vs /= np.linalg.norm(vs, axis=1, keepdims=True)
    with Store(path, dim=dim, judge=judges.never, sync=False) as s:
        s.deposit_many([("a", [f"r{i}"], vs[i : i + 1]) for i in range(n)])
        assert s.verify() == []
    size = os.path.getsize(os.path.join(path, "index.usearch"))
    assert size < n * dim * 4 // 2, size
    with open(os.path.join(path, "index.usearch"), "rb") as f:
        assert f.read(8) == b"ASIDX003"
    with Store(path, create=False) as s:
        assert s.verify() == []
        q = vs[17]
        assert s.recall("a", q, k=1)[0].text == "r17"


def test_an_l2_store_keeps_f32_and_an_f32_file_of_the_previous_format_still_serves(tmp_path):
    """Under l2sq int8 would lose the norms, so the graph stays f32; a file
    whose magic says 002 (f32, written before int8) is served as it is."""
    path = os.fspath(tmp_path / "l2")
    rng = np.random.default_rng(5)
    vs = (rng.standard_normal((200, DIM)) * 3).astype(np.float32)
    with Store(path, dim=DIM, metric="l2sq", judge=judges.never, sync=False) as s:
        s.deposit_many([("a", [f"r{i}"], vs[i : i + 1]) for i in range(len(vs))])
        want = [(r.id, r.score) for r in s.recall("a", vs[3], k=5, expand=False)]
    index = os.path.join(path, "index.usearch")
    with open(index, "r+b") as f:
        f.write(b"ASIDX002")
    mtime = os.stat(index).st_mtime_ns
    with Store(path, create=False, readonly=True, exact_cutoff=0) as s:
        assert [(r.id, r.score) for r in s.recall("a", vs[3], k=5, expand=False)] == want
        assert s.verify() == []
    assert os.stat(index).st_mtime_ns == mtime  # served, not rebuilt


@pytest.mark.parametrize("dim", [200, 448])
def test_long_owner_scans_stay_exact_at_every_kernel_length(tmp_path, dim):
    """An owner scan of more than 64 records bounds each score from int8
    rows (the int8 dot product's kernels: 128 and 64 bytes a step, then a
    tail) and re-scores what the bounds keep: at dims that reach every step,
    the hits are the exact best k with the f32 scores."""
    path = os.fspath(tmp_path / "s")
    rng = np.random.default_rng(dim)
    centres = rng.standard_normal((4, dim)).astype(np.float32)
    vs = centres[rng.integers(0, 4, 400)] + 0.3 * rng.standard_normal((400, dim)).astype(np.float32)
    vs /= np.linalg.norm(vs, axis=1, keepdims=True)
    with Store(path, dim=dim, judge=judges.never, sync=False) as s:
        s.deposit_many([("a", [f"r{i}"], vs[i : i + 1]) for i in range(len(vs))])
        qs = centres[rng.integers(0, 4, 12)] + 0.3 * rng.standard_normal((12, dim)).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        for q in qs:  # the first scan encodes the int8 rows, the later ones bound from them
            got = s.recall("a", q, k=8, expand=False)
            exact = vs @ q
            # The best 8 scores, each the exact score of the record it names
            # (records tied within float rounding may come in either order).
            np.testing.assert_allclose([m.score for m in got], np.sort(exact)[::-1][:8], rtol=0, atol=1e-5)
            mine = [exact[int(m.text[1:])] for m in got]
            np.testing.assert_allclose([m.score for m in got], mine, rtol=0, atol=1e-5)


@pytest.mark.parametrize("seed,spread", [(1, 0.2), (2, 1.0), (3, 1.0)])
def test_graph_recall_reads_only_what_the_bounds_keep_and_answers_the_same(tmp_path, seed, spread):
    """A large owner's recall walks the graph and re-scores only the
    candidates whose int8 bounds could reach its best k (and settles the
    crowded rule from the bounds where they can). Its answer must be what
    re-scoring every candidate gives: the exact best k of the owner when the
    walk reached them or the crowded rule sent it to a scan, else the best k
    of the same walk that prepare (which re-scores all it walks) ranks. And
    the first walk of a query, which scores every candidate exactly (the
    int8 copy lacks them), must answer as the same query again from bounds,
    for the owner of every record and for one of every second."""
    path = os.fspath(tmp_path / "s")
    vs = clustered(2400, seed, spread)
    ids = build(path, vs)
    with Store(path, create=False, judge=judges.never) as s:
        s.deposit_many([("b", [f"r{i}"], vs[i : i + 1]) for i in range(0, len(vs), 2)])
    index_of = {rid: i for i, rid in enumerate(ids)}
    qs = clustered(16, seed + 7, spread)
    # expansion_search 16 and k <= 5: the owner of every record walks 16
    # candidates (1,600 vectors' cost < 2,400), as prepare does for k <= 16.
    with Store(path, create=False, exact_cutoff=0, expansion_search=16, judge=judges.never) as s:
        engine = s._handles().engine
        for owner in ("a", "b"):
            for k in (1, 3, 5):
                first = [[(m.id, m.score) for m in s.recall(owner, q, k=k, expand=False)] for q in qs]
                again = [[(m.id, m.score) for m in s.recall(owner, q, k=k, expand=False)] for q in qs]
                assert again == first
                if owner != "a":
                    continue
                digests = b"".join(text_digest(f"query {j}") for j in range(len(qs)))
                _, _, offsets, got_ids, got_scores, *_ = engine.prepare(qs, digests, k, -2.0)
                for j, (q, hits) in enumerate(zip(qs, first)):
                    exact = vs @ q
                    best = sorted(range(len(vs)), key=lambda i: (-float(exact[i]), ids[i]))[:k]
                    walked = [index_of[int(x)] for x in got_ids[offsets[j] : offsets[j + 1]]]
                    got = [index_of[rid] for rid, _ in hits]
                    assert got in (best, walked), (got, best, walked)
                    np.testing.assert_allclose([sc for _, sc in hits], exact[got], rtol=0, atol=1e-5)
