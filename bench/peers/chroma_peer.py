"""Chroma, embedded (PersistentClient), the way its documentation suggests:
owner sets and edges as list metadata, a `where` filter with `$contains`."""

from __future__ import annotations

import gc
import logging
import os
import time
from typing import Any, Sequence

import chromadb
import numpy as np
from chromadb.api.client import SharedSystemClient
from chromadb.config import Settings
from datasets import BLOCK, corpus_blocks, corpus_owners, corpus_text

from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress
from .python_glue import CANDIDATES, MIN_SIMILARITY, digest, noop_judge

COLLECTION = "memories"
# The same HNSW settings as agentsensus; "ip" over unit vectors is cosine.
CONFIG = {"hnsw": {"space": "ip", "max_neighbors": 16, "ef_construction": 128, "ef_search": 64}}

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # offline machine: no telemetry calls
logging.getLogger("chromadb").setLevel(logging.ERROR)


class ChromaPeer(Peer):
    """Chroma has no transactions: deposit_many is a loop of deposits, and a
    deposit is a few calls (exact-duplicate lookup, candidate query, add,
    update). Record ids are str(int); corpus records keep their index."""

    name = "chroma"
    kind = "peer"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.client: Any = None
        self.col: Any = None
        self.next_id = 0

    def _client(self) -> Any:
        return chromadb.PersistentClient(path=self.path, settings=Settings(anonymized_telemetry=False))

    def build(self, corpus: Corpus, progress: Progress) -> None:
        self.client = self._client()
        self.col = self.client.create_collection(COLLECTION, embedding_function=None, configuration=CONFIG)
        batch = self.client.get_max_batch_size() // BLOCK * BLOCK  # whole blocks per add
        t0 = time.perf_counter()
        blocks = corpus_blocks(corpus.n)
        for s in range(0, corpus.n, batch):
            e = min(s + batch, corpus.n)
            metas = []
            for i in range(s, e):
                block = blocks[i // BLOCK]
                meta: dict[str, Any] = {"owners": corpus_owners(i), "digest": digest(corpus_text(i)).hex()}
                edges = [j for j in block if j != i]
                if edges:  # Chroma refuses empty lists
                    meta["edges"] = edges
                metas.append(meta)
            self.col.add(
                ids=[str(i) for i in range(s, e)],
                embeddings=corpus.vectors[s:e],
                documents=[corpus_text(i) for i in range(s, e)],
                metadatas=metas,
            )
            progress("chroma: add", e, corpus.n, t0)
        self.next_id = corpus.n

    # -- deposit ---------------------------------------------------------------

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, np.float32)
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        digs = [digest(t).hex() for t in statements]
        found = self.col.get(where={"digest": {"$in": digs}}, include=["metadatas"])
        existing = {m["digest"]: (int(i), m) for i, m in zip(found["ids"], found["metadatas"])}
        todo = [j for j, d in enumerate(digs) if d not in existing]
        requests = []
        if todo:
            res = self.col.query(query_embeddings=vecs[todo], n_results=CANDIDATES, include=["distances"])
            for j, ids, dists in zip(todo, res["ids"], res["distances"]):
                cands = [(int(i), 1.0 - d) for i, d in zip(ids, dists) if 1.0 - d >= MIN_SIMILARITY]
                if cands:
                    requests.append((statements[j], owner, cands))
        noop_judge(requests)  # never merges: every non-duplicate is new
        ids: list[int] = []
        new: dict[int, dict[str, Any]] = {}
        touched: dict[int, dict[str, Any]] = {}
        for d in digs:
            if d in existing:
                rid, meta = existing[d]
                touched[rid] = dict(meta)
            else:
                rid, self.next_id = self.next_id, self.next_id + 1
                new[rid] = {"owners": [owner], "digest": d}
            ids.append(rid)
        uniq = list(dict.fromkeys(ids))
        for meta in touched.values():
            if owner not in meta["owners"]:
                meta["owners"] = list(meta["owners"]) + [owner]
        for rid in uniq:
            meta = new.get(rid) or touched[rid]
            edges = list(meta.get("edges", []))
            edges += [o for o in uniq if o != rid and o not in edges]
            if edges:
                meta["edges"] = edges
        if new:
            pos = [ids.index(r) for r in new]
            self.col.add(
                ids=[str(r) for r in new],
                embeddings=vecs[pos],
                documents=[statements[p] for p in pos],
                metadatas=list(new.values()),
            )
        if touched:
            self.col.update(ids=[str(r) for r in touched], metadatas=list(touched.values()))

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        for owner, statements, vectors in items:
            self.deposit(owner, statements, vectors)

    # -- recall ----------------------------------------------------------------

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        where = {"owners": {"$contains": owner}}
        q = np.asarray(query, np.float32)[None, :]
        r = self.col.query(
            query_embeddings=q, n_results=k, where=where, include=["documents", "metadatas", "distances"]
        )
        hits = [int(i) for i in r["ids"][0]]
        neighbours: dict[int, None] = {}
        for meta in r["metadatas"][0]:
            for nb in meta.get("edges", []):
                if nb not in hits:
                    neighbours[nb] = None
        if neighbours:
            self.col.get(ids=[str(n) for n in neighbours], where=where, include=["documents", "metadatas"])
        return hits

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        # Chroma has no close(): drop the handles and its per-path system cache.
        self.col = self.client = None
        SharedSystemClient.clear_system_cache()
        gc.collect()

    def open(self) -> None:
        self.client = self._client()
        self.col = self.client.get_collection(COLLECTION, embedding_function=None)

    def probe(self, query: np.ndarray) -> None:
        self.recall("all", query, 5)
