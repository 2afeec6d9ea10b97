"""agentsensus itself: workloads through its public API only; the store
built either through the import path (default: the cached corpus store of
scale_stores.py, copied) or by deposits (``--agentsensus-build deposit``)."""

from __future__ import annotations

import shutil
import time
from typing import Optional, Sequence

import numpy as np
from agentsensus import Store, judges
from datasets import corpus_blocks, corpus_index, corpus_owners, corpus_text

from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress

ROUND = 100  # corpus records per deposit_many call while building


class AgentsensusPeer(Peer):
    """Store with a no-op judge (judges.never) and the default candidates (8)
    and min_similarity (0.75)."""

    name = "agentsensus"
    kind = "engine"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))

    #: "import": copy the cached corpus store, written through Engine.load (the
    #: same records, owner sets, edges and text digests deposits leave, without
    #: their merge log); "deposit": deposit_many the corpus (about 100-700
    #: records/s here: most of an hour at 100k on a busy machine).
    build_via = "import"

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.store: Optional[Store] = None

    def build(self, corpus: Corpus, progress: Progress) -> None:
        if self.build_via == "import":
            from datasets import corpus_chunk
            from scale_stores import corpus_store

            cached = corpus_store(corpus.n)
            # The cached store must hold this corpus (compare.py uses seed 0).
            assert np.array_equal(corpus_chunk(0, min(corpus.n, 10_000))[:1000], corpus.vectors[:1000])
            shutil.copytree(cached, self.path, ignore=shutil.ignore_patterns("ready"))
            self.store = Store(self.path, judge=judges.never, sync=self.sync)
            return
        self.store = Store(self.path, dim=corpus.vectors.shape[1], judge=judges.never, sync=self.sync)
        t0 = time.perf_counter()
        items: list[DepositItem] = []
        # The depositor writes its block; every other owner deposits the same
        # texts again, which merges as exact duplicates: the owner sets of corpus_owners.
        for block in corpus_blocks(corpus.n):
            texts = [corpus_text(i) for i in block]
            vecs = corpus.vectors[block.start : block.stop]
            items.append((corpus_owners(block.start)[0], texts, vecs))
            extra: dict[str, list[int]] = {}
            for i in block:
                for o in corpus_owners(i)[1:]:
                    extra.setdefault(o, []).append(i)
            for o, idx in extra.items():
                items.append((o, [corpus_text(i) for i in idx], corpus.vectors[idx]))
            if block.stop % ROUND == 0 or block.stop == corpus.n:
                self.store.deposit_many(items)
                items = []
                progress("agentsensus: deposit_many", block.stop, corpus.n, t0)

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        assert self.store is not None
        self.store.deposit(owner, statements, vectors)

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        assert self.store is not None
        self.store.deposit_many(items)

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        assert self.store is not None
        rows = self.store.recall(owner, query, k=k, expand=True)
        return [corpus_index(m.text) for m in rows if m.via == "hit"]

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def open(self) -> None:
        self.store = Store(self.path, judge=judges.never, sync=self.sync)

    def probe(self, query: np.ndarray) -> None:
        assert self.store is not None
        self.store.recall("all", query, k=5)
