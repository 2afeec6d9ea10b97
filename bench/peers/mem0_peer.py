"""mem0 (``mem0.Memory``) with ``infer=False`` and its default local vector
store, Qdrant in local mode (qdrant-client on disk, no server), offline.

What it takes to run offline, measured for real: ``MEM0_TELEMETRY=False``
(else it posts events); an OpenAI API key in the environment, because
``Memory`` constructs its default OpenAI LLM and embedder clients even when
neither is called (with ``infer=False`` and the embedder replaced, neither
is); and an embedder that needs no download. mem0's local embedder
(``huggingface``, sentence-transformers) fetches its model from the Hub at
first use, which this machine cannot, so ``memory.embedding_model`` is an
object that hands over the corpus's own vectors (a lookup by text, as in the
LangGraph peer), so that mem0 searches the same vectors as every peer.

mem0 has no owner sets: a memory belongs to one ``user_id``, so a record of
three owners is three memories (the record id and edges in its metadata).
Building adds the corpus through mem0's vector store in batches, with the
payload ``Memory.add`` writes (data, hash, times, user_id, role, metadata):
``add`` one memory at a time costs about 8 ms here, hours at 100k. A
deposit is, per statement, a candidate search of k=8 (mem0 searches one
user's memories at a time: the depositor's) and ``add(..., infer=False)``.
Recall is ``search(query, filters={"user_id": owner}, top_k=k)`` and
expansion a ``get`` of the owner's memory of each edge."""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

os.environ.setdefault("MEM0_TELEMETRY", "False")  # offline machine: no telemetry posts
os.environ.setdefault("OPENAI_API_KEY", "unused-offline")  # constructed, never called (see above)
logging.getLogger("mem0").setLevel(logging.ERROR)

from datasets import BLOCK, corpus_blocks, corpus_index, corpus_owners, corpus_text  # noqa: E402
from mem0 import Memory  # noqa: E402

from . import PeerMissing  # noqa: E402
from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress  # noqa: E402
from .python_glue import CANDIDATES, MIN_SIMILARITY, noop_judge  # noqa: E402

BATCH = 1_000  # memories per vector-store insert while building
MAX_RECORDS = 10_000  # corpus records beyond which the build is not attempted (see build)


class _LookupEmbedder:
    """mem0's embedder interface (``embed(text, memory_action)``) over
    vectors the peer registers before each call."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.pending: dict[str, np.ndarray] = {}

    def embed(self, text: str, memory_action: Any = None) -> list[float]:
        v = self.pending.pop(text, None)
        if v is None:
            v = self.corpus.vectors[corpus_index(text)]
        return v.tolist()


class Mem0Peer(Peer):
    name = "mem0"
    kind = "peer"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.memory: Any = None
        self.embedder: Any = None
        self.dim = 0
        self.ids: dict[tuple[str, int], str] = {}  # (owner, record id) -> mem0 memory id
        self.next_id = 0

    def _config(self) -> dict[str, Any]:
        return {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memories",
                    "path": os.path.join(self.path, "qdrant"),
                    "embedding_model_dims": self.dim,
                },
            },
            "history_db_path": os.path.join(self.path, "history.db"),
        }

    def _open(self) -> None:
        self.memory = Memory.from_config(self._config())
        self.memory.embedding_model = self.embedder

    def build(self, corpus: Corpus, progress: Progress) -> None:
        if corpus.n > MAX_RECORDS:
            raise PeerMissing(
                f"mem0: not measured at {corpus.n:,} records (at most {MAX_RECORDS:,}): its local Qdrant "
                f"persists every point in its own SQLite commit, about 10 ms each here, and the "
                f"{sum(len(corpus_owners(i)) for i in range(corpus.n)):,} memories (one per owner of a record) "
                "would take most of an hour to load"
            )
        os.makedirs(self.path, exist_ok=True)
        self.dim = corpus.vectors.shape[1]
        self.embedder = _LookupEmbedder(corpus)
        self._open()
        blocks = corpus_blocks(corpus.n)
        store = self.memory.vector_store
        t0 = time.perf_counter()
        vecs: list[list[float]] = []
        ids: list[str] = []
        payloads: list[dict[str, Any]] = []
        for i in range(corpus.n):
            text = corpus_text(i)
            now = datetime.now(timezone.utc).isoformat()
            edges = [j for j in blocks[i // BLOCK] if j != i]
            for o in corpus_owners(i):
                mid = str(uuid.uuid4())
                self.ids[(o, i)] = mid
                ids.append(mid)
                vecs.append(corpus.vectors[i].tolist())
                payloads.append(
                    {
                        "rid": i,
                        "edges": edges,
                        "role": "user",
                        "user_id": o,
                        "data": text,
                        "hash": hashlib.md5(text.encode()).hexdigest(),
                        "created_at": now,
                        "updated_at": now,
                    }
                )
            if len(ids) >= BATCH or i == corpus.n - 1:
                store.insert(vectors=vecs, ids=ids, payloads=payloads)
                vecs, ids, payloads = [], [], []
                progress("mem0: vector store insert", i + 1, corpus.n, t0)
        self.next_id = corpus.n

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, np.float32)
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        requests = []
        for text, v in zip(statements, vecs):
            self.embedder.pending[text] = v
            found = self.memory.search(text, filters={"user_id": owner}, top_k=CANDIDATES, threshold=MIN_SIMILARITY)
            cands = [(int(r["metadata"]["rid"]), float(r["score"])) for r in found["results"]]
            if cands:
                requests.append((text, owner, cands))
        noop_judge(requests)  # never merges: every statement is new
        rids = list(range(self.next_id, self.next_id + len(statements)))
        self.next_id += len(statements)
        for rid, text, v in zip(rids, statements, vecs):
            self.embedder.pending[text] = v
            meta = {"rid": rid, "edges": [o for o in rids if o != rid]}
            out = self.memory.add([{"role": "user", "content": text}], user_id=owner, metadata=meta, infer=False)
            self.ids[(owner, rid)] = out["results"][0]["id"]

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        for owner, statements, vectors in items:
            self.deposit(owner, statements, vectors)

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        key = f"query {self.next_id} {id(query)}"
        self.embedder.pending[key] = np.asarray(query, np.float32)
        found = self.memory.search(key, filters={"user_id": owner}, top_k=k, threshold=0.0)
        hits = [int(r["metadata"]["rid"]) for r in found["results"]]
        for r in found["results"]:
            for nb in r["metadata"].get("edges", []):
                mid = self.ids.get((owner, nb))
                if nb not in hits and mid is not None:
                    self.memory.get(mid)
        return hits

    def close(self) -> None:
        if self.memory is not None:
            self.memory.vector_store.client.close()  # local Qdrant locks its directory
            self.memory.db.close()
            self.memory = None

    def open(self) -> None:
        self._open()

    def probe(self, query: np.ndarray) -> None:
        self.recall("all", query, 5)
