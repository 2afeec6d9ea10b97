"""The limits of the parts agentsensus is built on, doing only their own
share of each workload: usearch's search and insertion, and LMDB's puts."""

from __future__ import annotations

import os
import time
from typing import Any, Optional, Sequence

import lmdb
import numpy as np
from datasets import corpus_text
from usearch.index import Index

from . import hnsw
from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress
from .python_glue import CANDIDATES, MAP_SIZE, key


class RawUsearchPeer(Peer):
    """The usearch Python package on the corpus, same settings as the engine.

    A deposit is, per statement, one search(k=candidates) and one add, the
    HNSW work every new statement costs. A deposit_many round searches and
    adds its vectors in two batched calls (usearch's own threads), the
    fastest form usearch offers. Recall is one unfiltered search: owner is
    ignored, so there is no recall@k to score."""

    name = "usearch"
    kind = "limit"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))

    def __init__(self, path: str, *, sync: bool = False, cache_dir: str) -> None:
        super().__init__(path, sync=sync)
        self.cache_dir = cache_dir
        self.index: Optional[Index] = None
        self.dim = 0
        self.next_key = 0

    def _file(self) -> str:
        return os.path.join(self.path, "index.usearch")

    def build(self, corpus: Corpus, progress: Progress) -> None:
        os.makedirs(self.path, exist_ok=True)
        self.dim = corpus.vectors.shape[1]
        self.index = hnsw.load_corpus_index(corpus, self._file(), self.cache_dir, progress)
        self.next_key = corpus.n

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        assert self.index is not None
        for v in vectors:
            self.index.search(v, CANDIDATES)
            self.index.add(self.next_key, v)
            self.next_key += 1

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        assert self.index is not None
        vecs = np.concatenate([np.asarray(v, np.float32) for _, _, v in items])
        keys = np.arange(self.next_key, self.next_key + len(vecs), dtype=np.uint64)
        self.index.search(vecs, CANDIDATES)
        self.index.add(keys, vecs)
        self.next_key += len(vecs)

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        assert self.index is not None
        return [int(x) for x in self.index.search(query, k).keys]

    def close(self) -> None:
        if self.index is not None:
            self.index.save(self._file())
            self.index = None

    def open(self) -> None:
        self.index = hnsw.new_index(self.dim)
        self.index.load(self._file())

    def probe(self, query: np.ndarray) -> None:
        assert self.index is not None
        self.index.search(query, 5)


class RawLmdbPeer(Peer):
    """The lmdb package putting each statement's text and vector bytes (what
    agentsensus must store at the least), one write transaction per deposit
    or per round, with the same sync setting as the engine."""

    name = "lmdb"
    kind = "limit"
    workloads = frozenset(DEPOSIT_WORKLOADS + (OPEN,))

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.env: Any = None
        self.records: Any = None
        self.vectors: Any = None
        self.next_key = 0

    def _open_env(self) -> None:
        self.env = lmdb.open(self.path, max_dbs=2, map_size=MAP_SIZE, sync=self.sync)
        self.records = self.env.open_db(b"records")
        self.vectors = self.env.open_db(b"vectors")

    def build(self, corpus: Corpus, progress: Progress) -> None:
        os.makedirs(self.path, exist_ok=True)
        self._open_env()
        t0 = time.perf_counter()
        for s in range(0, corpus.n, 10_000):  # the same number of records as every other store
            e = min(s + 10_000, corpus.n)
            with self.env.begin(write=True) as txn:
                for i in range(s, e):
                    txn.put(key(i), corpus_text(i).encode(), db=self.records, append=True)
                    txn.put(key(i), corpus.vectors[i].tobytes(), db=self.vectors, append=True)
            progress("lmdb: puts", e, corpus.n, t0)
        self.next_key = corpus.n

    def _put(self, txn: Any, statements: Sequence[str], vectors: np.ndarray) -> None:
        for text, v in zip(statements, vectors):
            txn.put(key(self.next_key), text.encode(), db=self.records)
            txn.put(key(self.next_key), np.asarray(v, np.float32).tobytes(), db=self.vectors)
            self.next_key += 1

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        with self.env.begin(write=True) as txn:
            self._put(txn, statements, vectors)

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        with self.env.begin(write=True) as txn:
            for _, statements, vectors in items:
                self._put(txn, statements, vectors)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    def open(self) -> None:
        self._open_env()

    def probe(self, query: np.ndarray) -> None:
        with self.env.begin() as txn:
            txn.get(key(0), db=self.records)
