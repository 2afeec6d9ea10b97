"""The benchmark corpus (vectors, texts, owners, queries); scale_stores.py
builds stores of it, once, cached on disk outside git (bench/.data/).

Stored records are clustered unit vectors at dim 384 (the MiniLM width):
topics of related statements, as real embeddings are, and not isotropic noise
where every similarity is 0.05-0.2 and no nearest neighbour means anything.
Queries are perturbed records (a recall asks about something stored). Fresh
deposits are plain Gaussian unit vectors, far from every record, so that no
merge fires. Everything is seeded: a store of a given size is the same on
every machine and every run. Owners are spread so that one store serves
several owner selectivities at once.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import numpy as np

DIM = 384
# Where built stores are cached; AGENTSENSUS_BENCH_DATA moves it (the smoke
# runs of tests/test_bench_smoke.py use a temporary directory).
DATA = os.environ.get("AGENTSENSUS_BENCH_DATA") or os.path.join(os.path.dirname(os.path.abspath(__file__)), ".data")


def vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


# The clustered corpus: CLUSTERS topic centres; a record is its centre plus
# Gaussian noise of norm about RECORD_NOISE (two records of a topic are about
# 0.64 similar, below the 0.75 merge threshold); a query is a record plus noise
# of norm about QUERY_NOISE (about 0.89 similar to it).
CLUSTERS = 2_000
RECORD_NOISE = 0.75
QUERY_NOISE = 0.5


# The corpus kinds: (topic centres, record noise, query noise). "hard" has
# few, tight topics (200 centres, noise 0.35: two records of a topic are
# about 0.89 similar), so a query near a record has hundreds of near-ties and
# a graph search that stops early misses some of the exact top k.
KINDS: dict[str, tuple[int, float, float]] = {
    "clustered": (CLUSTERS, RECORD_NOISE, QUERY_NOISE),
    "hard": (200, 0.35, 0.35),
}
# Part of cached file names, with the kind: stores of another corpus are not
# reused ("2": the "half" owner was added to corpus_owners).
CORPUS_KIND = "clustered2"


def corpus_tag(kind: str = "clustered") -> str:
    """The name cached files of a corpus kind carry."""
    return CORPUS_KIND if kind == "clustered" else f"{kind}2"


def _unit(v: np.ndarray) -> np.ndarray:
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def _noise(rng: np.random.Generator, n: int, norm: float, dim: int) -> np.ndarray:
    return rng.standard_normal((n, dim), dtype=np.float32) * np.float32(norm / np.sqrt(dim))


CORPUS_CHUNK = 10_000  # rows of the corpus generated from one seed


def corpus_chunk(start: int, stop: int, seed: int = 0, dim: int = DIM, kind: str = "clustered") -> np.ndarray:
    """Rows start..stop of the corpus of that kind (start a multiple of
    CORPUS_CHUNK, at most one chunk): what corpus(n)[start:stop] holds, made
    without the rest, so a 1M corpus never has to sit in memory."""
    assert start % CORPUS_CHUNK == 0 and 0 < stop - start <= CORPUS_CHUNK
    clusters, record_noise, _ = KINDS[kind]
    centres = vectors(clusters, seed=seed * 1_000_003 + 777, dim=dim)
    rng = np.random.default_rng([seed, start])
    m = stop - start
    topic = rng.integers(0, clusters, m)
    return _unit(centres[topic] + _noise(rng, m, record_noise, dim))


def corpus(n: int, seed: int = 0, dim: int = DIM, kind: str = "clustered") -> np.ndarray:
    """n unit vectors of that kind (row i is record i), the same for the
    same n, seed, dim and kind."""
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, CORPUS_CHUNK):
        out[start : start + CORPUS_CHUNK] = corpus_chunk(start, min(start + CORPUS_CHUNK, n), seed, dim, kind)
    return out


def queries(records: np.ndarray, m: int, seed: int) -> np.ndarray:
    """m queries near random records of the corpus (perturbed copies)."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(records), m)
    return _unit(records[pick] + _noise(rng, m, QUERY_NOISE, records.shape[1]))


def corpus_queries(n: int, m: int, seed: int, corpus_seed: int = 0, kind: str = "clustered") -> np.ndarray:
    """queries(corpus(n), m, seed) (with the kind's query noise), generating
    only the chunks it picks from."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, n, m)
    rows = np.empty((m, DIM), np.float32)
    for start in np.unique(pick // CORPUS_CHUNK * CORPUS_CHUNK):
        chunk = corpus_chunk(int(start), min(int(start) + CORPUS_CHUNK, n), corpus_seed, DIM, kind)
        here = (pick >= start) & (pick < start + CORPUS_CHUNK)
        rows[here] = chunk[pick[here] - start]
    return _unit(rows + _noise(rng, m, KINDS[kind][2], DIM))


def progress(label: str, done: int, total: int, t0: float) -> None:
    rate = done / max(time.perf_counter() - t0, 1e-9)
    eta = (total - done) / rate if rate else 0.0
    out = sys.stderr
    out.write(f"\r{label}: {done:,}/{total:,} ({rate:,.0f}/s, {eta:,.0f}s left)   ")
    if done == total:
        out.write("\n")
    out.flush()


def copy_of(path: str, dest: str) -> str:
    """A private copy to write into, so the cached store stays as built."""
    shutil.copytree(path, dest)
    return dest


# -- side-by-side corpus (bench/compare.py) ------------------------------------

BLOCK = 5  # statements per deposit in the side-by-side corpus: edges to expand along

# Owner per selectivity in the side-by-side corpus (see corpus_owners).
SELECTIVITY: dict[str, str] = {"0.1%": "milli", "1%": "a7", "10%": "tenth", "100%": "all"}
# The scale suite measures a 50% owner as well.
SCALE_SELECTIVITY: dict[str, str] = {"0.1%": "milli", "1%": "a7", "10%": "tenth", "50%": "half", "100%": "all"}


def corpus_depositor(i: int) -> str:
    """Who deposited record i: blocks of BLOCK consecutive records, 100 agents
    in rotation, so each agent owns 1% and a block is one affiliated deposit."""
    return f"a{(i // BLOCK) % 100}"


def corpus_owners(i: int) -> list[str]:
    """Record i's owner set, depositor first: besides the depositor, "all"
    owns every record, "half" every second, "tenth" every tenth and "milli"
    every thousandth, so one store serves every selectivity of
    SCALE_SELECTIVITY."""
    owners = [corpus_depositor(i), "all"]
    if i % 2 == 0:
        owners.append("half")
    if i % 10 == 0:
        owners.append("tenth")
    if i % 1000 == 0:
        owners.append("milli")
    return owners


def corpus_text(i: int) -> str:
    """Record i's statement; corpus_index inverts it."""
    return f"record {i}"


def corpus_index(text: str) -> int:
    """The corpus index of a record text made by corpus_text."""
    return int(text.rsplit(" ", 1)[1])


def corpus_owned(n: int, owner: str) -> np.ndarray:
    """Indices of the records of an n-record corpus that owner owns, ascending."""
    idx = np.arange(n)
    if owner == "all":
        return idx
    if owner == "half":
        return idx[idx % 2 == 0]
    if owner == "tenth":
        return idx[idx % 10 == 0]
    if owner == "milli":
        return idx[idx % 1000 == 0]
    return idx[(idx // BLOCK) % 100 == int(owner[1:])]


def corpus_blocks(n: int) -> "list[range]":
    """The corpus as deposits: consecutive ranges of BLOCK records (one depositor each)."""
    return [range(s, min(s + BLOCK, n)) for s in range(0, n, BLOCK)]


def exact_top(n: int, owner: str, qs: np.ndarray, k: int = 5, kind: str = "clustered") -> list[set[int]]:
    """The record ids (corpus index + 1) of the exact top k of owner's records
    of the n-record corpus for each query, ties to the lower id; cached in
    DATA, since at 1M it is a scan of 1.5 GB of vectors."""
    import hashlib

    tag = hashlib.sha1(qs.tobytes()).hexdigest()[:10]
    cache = os.path.join(DATA, f"exact-{n}-{owner}-{len(qs)}-{k}-{tag}-{corpus_tag(kind)}.npy")
    if os.path.exists(cache):
        top = np.load(cache)
    else:
        owned = corpus_owned(n, owner)
        best = np.full((len(qs), k), -np.inf, np.float32)
        ids = np.zeros((len(qs), k), np.int64)
        for start in range(0, n, CORPUS_CHUNK):
            mine = owned[(owned >= start) & (owned < start + CORPUS_CHUNK)]
            if not len(mine):
                continue
            scores = qs @ corpus_chunk(start, min(start + CORPUS_CHUNK, n), 0, DIM, kind)[mine - start].T
            all_s = np.concatenate([best, scores], axis=1)
            all_i = np.concatenate([ids, np.broadcast_to(mine + 1, scores.shape)], axis=1)
            # stable on a list kept in id order: equal scores keep the lower id
            pick = np.argsort(-all_s, axis=1, kind="stable")[:, :k]
            best = np.take_along_axis(all_s, pick, axis=1)
            ids = np.take_along_axis(all_i, pick, axis=1)
        top = ids
        os.makedirs(DATA, exist_ok=True)
        np.save(cache, top)
    return [set(int(i) for i in row) for row in top]
