"""hnswlib and FAISS as raw limits beside usearch: the same HNSW settings
(inner product over unit vectors, 16 links, expansion 128 at insertion and
64 at search), doing only their share of each workload, as RawUsearchPeer
does (peers/raw_limits.py): a statement is one search(k=candidates) and one
add; a round of 100 one batched search and one batched add; recall one
unfiltered search (no owners, so no recall@k to score); open a load of the
saved index. Both indexes of the corpus are built once and cached in the
bench data directory, as the usearch one is (peers/hnsw.py)."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Sequence

import numpy as np

from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress
from .hnsw import CHUNK, SETTINGS, _fingerprint
from .python_glue import CANDIDATES

M = SETTINGS["connectivity"]
EF_ADD = SETTINGS["expansion_add"]
EF_SEARCH = SETTINGS["expansion_search"]


class _AnnLimit(Peer):
    kind = "limit"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))
    file = "index.bin"

    def __init__(self, path: str, *, sync: bool = False, cache_dir: str) -> None:
        super().__init__(path, sync=sync)
        self.cache_dir = cache_dir
        self.index: Any = None
        self.dim = 0
        self.capacity = 0

    def _file(self) -> str:
        return os.path.join(self.path, self.file)

    def build(self, corpus: Corpus, progress: Progress) -> None:
        os.makedirs(self.path, exist_ok=True)
        self.dim = corpus.vectors.shape[1]
        tag = f"{self.name}-{corpus.n}-{_fingerprint(corpus)}-{self.version()}.index"
        cached = os.path.join(self.cache_dir, tag)
        if not os.path.exists(cached):
            index = self._new(corpus.n)
            t0 = time.perf_counter()
            for s in range(0, corpus.n, CHUNK):
                e = min(s + CHUNK, corpus.n)
                self._add(index, np.arange(s, e), corpus.vectors[s:e])
                progress(f"{self.name} index of the corpus", e, corpus.n, t0)
            os.makedirs(self.cache_dir, exist_ok=True)
            self._save(index, cached + ".tmp")
            os.replace(cached + ".tmp", cached)
        shutil.copyfile(cached, self._file())
        self.index = self._load(self._file())

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        for v in np.asarray(vectors, np.float32):
            self._search(v[None, :], CANDIDATES)
            self._add(self.index, np.array([self._count()]), v[None, :])

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        vecs = np.concatenate([np.asarray(v, np.float32) for _, _, v in items])
        self._search(vecs, CANDIDATES)
        start = self._count()
        self._add(self.index, np.arange(start, start + len(vecs)), vecs)

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        return [int(x) for x in self._search(np.asarray(query, np.float32)[None, :], k)[0]]

    def close(self) -> None:
        if self.index is not None:
            self._save(self.index, self._file())
            self.index = None

    def open(self) -> None:
        self.index = self._load(self._file())

    def probe(self, query: np.ndarray) -> None:
        self.recall("all", query, 5)

    # -- per library -----------------------------------------------------------

    def version(self) -> str:
        raise NotImplementedError

    def _new(self, n: int) -> Any:
        raise NotImplementedError

    def _add(self, index: Any, ids: np.ndarray, vecs: np.ndarray) -> None:
        raise NotImplementedError

    def _search(self, q: np.ndarray, k: int) -> np.ndarray:
        raise NotImplementedError

    def _count(self) -> int:
        raise NotImplementedError

    def _save(self, index: Any, path: str) -> None:
        raise NotImplementedError

    def _load(self, path: str) -> Any:
        raise NotImplementedError


class HnswlibPeer(_AnnLimit):
    """hnswlib (``Index(space="ip")``): labels are corpus indices; the index
    grows by resize_index when full (hnswlib does not grow by itself)."""

    name = "hnswlib"

    def __init__(self, path: str, *, sync: bool = False, cache_dir: str) -> None:
        import hnswlib  # noqa: F401  (here, so a missing package is found at construction)

        super().__init__(path, sync=sync, cache_dir=cache_dir)

    def version(self) -> str:
        from importlib.metadata import version

        return version("hnswlib")

    def _new(self, n: int) -> Any:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=self.dim)
        index.init_index(max_elements=max(n, 1024), ef_construction=EF_ADD, M=M)
        index.set_ef(EF_SEARCH)
        return index

    def _add(self, index: Any, ids: np.ndarray, vecs: np.ndarray) -> None:
        need = index.get_current_count() + len(ids)
        if need > index.get_max_elements():
            index.resize_index(max(need, 2 * index.get_max_elements()))
        index.add_items(vecs, ids)

    def _search(self, q: np.ndarray, k: int) -> np.ndarray:
        labels, _ = self.index.knn_query(q, k=k)
        return labels

    def _count(self) -> int:
        return int(self.index.get_current_count())

    def _save(self, index: Any, path: str) -> None:
        index.save_index(path)

    def _load(self, path: str) -> Any:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=self.dim)
        index.load_index(path)
        index.set_ef(EF_SEARCH)
        return index


class FaissPeer(_AnnLimit):
    """FAISS ``IndexHNSWFlat`` with ``METRIC_INNER_PRODUCT``: ids are
    positions, which are corpus indices here (records are added in order)."""

    name = "faiss"

    def __init__(self, path: str, *, sync: bool = False, cache_dir: str) -> None:
        import faiss  # noqa: F401  (here, so a missing package is found at construction)

        super().__init__(path, sync=sync, cache_dir=cache_dir)

    def version(self) -> str:
        import faiss

        return str(faiss.__version__)

    def _new(self, n: int) -> Any:
        import faiss

        index = faiss.IndexHNSWFlat(self.dim, M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_ADD
        index.hnsw.efSearch = EF_SEARCH
        return index

    def _add(self, index: Any, ids: np.ndarray, vecs: np.ndarray) -> None:
        assert index.ntotal == int(ids[0])  # positions are the ids
        index.add(np.ascontiguousarray(vecs, np.float32))

    def _search(self, q: np.ndarray, k: int) -> np.ndarray:
        _, labels = self.index.search(np.ascontiguousarray(q, np.float32), k)
        return labels

    def _count(self) -> int:
        return int(self.index.ntotal)

    def _save(self, index: Any, path: str) -> None:
        import faiss

        faiss.write_index(index, path)

    def _load(self, path: str) -> Any:
        import faiss

        index = faiss.read_index(path)
        index.hnsw.efSearch = EF_SEARCH
        return index
