"""LangGraph's ``InMemoryStore`` with an index (``index={"dims", "embed",
"fields"}``), the way its documentation suggests for long-term memory: a
namespace per owner, ``(owner,)``, holding an item per record the owner owns
(key: the record id; value: text, edges, digest), so a record of three owners
is three items. Owner-scoped recall is ``search((owner,), query=..., limit=k)``
and expansion ``get`` of each edge in the owner's namespace.

The embed function hands LangGraph the corpus's own vectors (a lookup by
text: the records' texts, the fresh statements' and the queries', which are
registered before each call), so it searches the same vectors as every peer.
It lives in memory only: no open workload. Deposits: per statement a
candidate search of k=8 over every namespace, then a put into the
depositor's namespace (no exact-duplicate lookup: it has no index on
values)."""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from datasets import BLOCK, corpus_blocks, corpus_index, corpus_owners, corpus_text
from langgraph.store.memory import InMemoryStore

from .base import DEPOSIT_WORKLOADS, RECALL, Corpus, DepositItem, Peer, Progress
from .python_glue import CANDIDATES, MIN_SIMILARITY, digest, noop_judge


class LangGraphPeer(Peer):
    name = "langgraph"
    kind = "peer"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL,))

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.store: Any = None
        self.corpus: Any = None
        self.pending: dict[str, np.ndarray] = {}  # texts whose vectors the next embed call hands over
        self.next_id = 0

    def _embed(self, texts: list[str]) -> list[Any]:
        out = []
        for t in texts:
            v = self.pending.pop(t, None)
            out.append(v if v is not None else self.corpus.vectors[corpus_index(t)])
        return out

    def build(self, corpus: Corpus, progress: Progress) -> None:
        self.corpus = corpus
        dim = corpus.vectors.shape[1]
        self.store = InMemoryStore(index={"dims": dim, "embed": self._embed, "fields": ["text"]})
        blocks = corpus_blocks(corpus.n)
        t0 = time.perf_counter()
        # put by put: a batch that holds one text twice (a record in several
        # namespaces) gets fewer embeddings than items and raises.
        for i in range(corpus.n):
            text = corpus_text(i)
            value = {"text": text, "edges": [j for j in blocks[i // BLOCK] if j != i], "digest": digest(text).hex()}
            for o in corpus_owners(i):
                self.store.put((o,), str(i), value)
            if (i + 1) % 1000 == 0 or i == corpus.n - 1:
                progress("langgraph: put", i + 1, corpus.n, t0)
        self.next_id = corpus.n

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, np.float32)
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        requests = []
        for text, v in zip(statements, vecs):
            self.pending[text] = v
            found = self.store.search((), query=text, limit=CANDIDATES)
            cands = [
                (int(it.key), float(it.score)) for it in found if it.score is not None and it.score >= MIN_SIMILARITY
            ]
            if cands:
                requests.append((text, owner, cands))
        noop_judge(requests)  # never merges: every statement is new
        ids = list(range(self.next_id, self.next_id + len(statements)))
        self.next_id += len(statements)
        for rid, text, v in zip(ids, statements, vecs):
            self.pending[text] = v
            value = {"text": text, "edges": [o for o in ids if o != rid], "digest": digest(text).hex()}
            self.store.put((owner,), str(rid), value)

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        for owner, statements, vectors in items:
            self.deposit(owner, statements, vectors)

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        key = f"query {self.next_id} {id(query)}"
        self.pending[key] = np.asarray(query, np.float32)
        found = self.store.search((owner,), query=key, limit=k)
        hits = [int(it.key) for it in found]
        for it in found:
            for nb in it.value.get("edges", []):
                if nb not in hits:
                    self.store.get((owner,), str(nb))  # None when the owner does not own it
        return hits

    def close(self) -> None:
        pass  # in memory only: nothing to persist, and no open workload

    def open(self) -> None:
        raise NotImplementedError("InMemoryStore has no persistence")

    def probe(self, query: np.ndarray) -> None:
        raise NotImplementedError("InMemoryStore has no persistence")
