"""The usearch settings agentsensus uses, for the peers built on the usearch
Python package, and a cached HNSW index of the corpus they all start from."""

from __future__ import annotations

import hashlib
import os
import shutil
import time

import numpy as np
import usearch
from usearch.index import Index

from .base import Corpus, Progress

# cpp/src/index/vector_index.hpp: cos is stored as unit vectors and searched by inner product.
SETTINGS = dict(metric="ip", dtype="f32", connectivity=16, expansion_add=128, expansion_search=64)
CHUNK = 5_000  # vectors per batch add while building (progress granularity)


def new_index(dim: int) -> Index:
    """An empty index with agentsensus's settings."""
    return Index(ndim=dim, **SETTINGS)


def load_corpus_index(corpus: Corpus, dest: str, cache_dir: str, progress: Progress) -> Index:
    """An index of the corpus (keys = corpus indices), copied to dest.

    Building 100k HNSW insertions takes minutes on 2 cores, and the result
    depends only on the corpus, so it is built once per corpus and usearch
    version and copied; both usearch-based peers then start from the same
    graph (the agentsensus and Chroma peers build their own, through their API).
    """
    cached = os.path.join(cache_dir, f"usearch-{corpus.n}-{_fingerprint(corpus)}-{usearch.__version__}.index")
    if not os.path.exists(cached):
        index = new_index(corpus.vectors.shape[1])
        t0 = time.perf_counter()
        for s in range(0, corpus.n, CHUNK):
            e = min(s + CHUNK, corpus.n)
            index.add(np.arange(s, e, dtype=np.uint64), corpus.vectors[s:e])
            progress("usearch index of the corpus", e, corpus.n, t0)
        os.makedirs(cache_dir, exist_ok=True)
        index.save(cached + ".tmp")
        os.replace(cached + ".tmp", cached)
    shutil.copyfile(cached, dest)
    index = new_index(corpus.vectors.shape[1])
    index.load(dest)
    return index


def _fingerprint(corpus: Corpus) -> str:
    """Tells corpora of the same size apart (another seed or dim)."""
    v = corpus.vectors
    return f"{v.shape[1]}d-{hashlib.sha1(v[:4].tobytes()).hexdigest()[:8]}"
