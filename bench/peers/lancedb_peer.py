"""LanceDB, embedded (``lancedb.connect(path)``), with its own filter: one
table of records whose owner sets and edges are list columns, owner-scoped
recall as a prefiltered vector search ``where array_has_any(owners, [...])``
(a LABEL_LIST scalar index on owners, a btree on the digest).

Its vector search here is LanceDB's flat scan: exact, no ANN index to train
(what a table without ``create_index`` does). Deposits follow the same
semantics as the other peers: exact duplicates by digest, candidates by a
search of k=8 over every record, new rows added with the deposit's edges;
a duplicate's owner set and edges are rewritten by ``merge_insert``."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa

# LanceDB registers a converter for Hugging Face's `datasets` whenever a
# module of that name is imported, and bench/datasets.py is one: import
# lancedb without it, and mark that converter as done.
_ours = sys.modules.pop("datasets", None)
try:
    import lancedb
    import lancedb.scannable
    from lancedb.index import BTree, LabelList
finally:
    if _ours is not None:
        sys.modules["datasets"] = _ours
lancedb.scannable._registered_modules.add("datasets")

from datasets import BLOCK, corpus_blocks, corpus_owners, corpus_text  # noqa: E402

from .base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, DepositItem, Peer, Progress  # noqa: E402
from .python_glue import CANDIDATES, MIN_SIMILARITY, digest, noop_judge  # noqa: E402

TABLE = "memories"
BATCH = 10_000  # rows per add while building


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.int64()),
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("owners", pa.list_(pa.string())),
            ("edges", pa.list_(pa.int64())),
            ("digest", pa.string()),
        ]
    )


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class LanceDbPeer(Peer):
    name = "lancedb"
    kind = "peer"
    workloads = frozenset(DEPOSIT_WORKLOADS + (RECALL, OPEN))

    def __init__(self, path: str, *, sync: bool = False) -> None:
        super().__init__(path, sync=sync)
        self.db: Any = None
        self.table: Any = None
        self.dim = 0
        self.next_id = 0

    def _rows(
        self, ids: list[int], texts: list[str], vecs: np.ndarray, owners: list[list[str]], edges: list[list[int]]
    ):
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "text": texts,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1), pa.float32()), self.dim),
                "owners": owners,
                "edges": pa.array(edges, pa.list_(pa.int64())),
                "digest": [digest(t).hex() for t in texts],
            },
            schema=_schema(self.dim),
        )

    def build(self, corpus: Corpus, progress: Progress) -> None:
        os.makedirs(self.path, exist_ok=True)
        self.dim = corpus.vectors.shape[1]
        self.db = lancedb.connect(self.path)
        self.table = None
        blocks = corpus_blocks(corpus.n)
        t0 = time.perf_counter()
        for s in range(0, corpus.n, BATCH):
            e = min(s + BATCH, corpus.n)
            idx = list(range(s, e))
            edges = [[j for j in blocks[i // BLOCK] if j != i] for i in idx]
            rows = self._rows(
                idx, [corpus_text(i) for i in idx], corpus.vectors[s:e], [corpus_owners(i) for i in idx], edges
            )
            if self.table is None:
                self.table = self.db.create_table(TABLE, data=rows)
            else:
                self.table.add(rows)
            progress("lancedb: add", e, corpus.n, t0)
        self.table.create_index("owners", config=LabelList())
        self.table.create_index("digest", config=BTree())
        self.next_id = corpus.n

    # -- deposit ---------------------------------------------------------------

    def _search(self, v: np.ndarray, k: int, where: Optional[str], columns: list[str]) -> pa.Table:
        q = self.table.search(v, vector_column_name="vector").distance_type("dot").limit(k)
        if where:
            q = q.where(where, prefilter=True)
        return q.select(columns + ["_distance"]).to_arrow()

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        vecs = np.asarray(vectors, np.float32)
        vecs = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        digs = [digest(t).hex() for t in statements]
        inlist = ", ".join(_sql_str(d) for d in digs)
        found = (
            self.table.search().where(f"digest IN ({inlist})").select(["id", "digest", "owners", "edges"]).to_arrow()
        )
        existing = {r["digest"]: r for r in found.to_pylist()}
        requests = []
        for j, d in enumerate(digs):
            if d in existing:
                continue
            res = self._search(vecs[j], CANDIDATES, None, ["id"])
            # dot distance is 1 - similarity over unit vectors
            cands = [(int(i), 1.0 - float(x)) for i, x in zip(res["id"].to_pylist(), res["_distance"].to_pylist())]
            cands = [c for c in cands if c[1] >= MIN_SIMILARITY]
            if cands:
                requests.append((statements[j], owner, cands))
        noop_judge(requests)  # never merges: every non-duplicate is new
        ids: list[int] = []
        new: list[int] = []
        for j, d in enumerate(digs):
            if d in existing:
                ids.append(int(existing[d]["id"]))
            else:
                ids.append(self.next_id)
                new.append(j)
                self.next_id += 1
        uniq = list(dict.fromkeys(ids))
        if new:
            rids = [ids[j] for j in new]
            edges = [[o for o in uniq if o != r] for r in rids]
            self.table.add(self._rows(rids, [statements[j] for j in new], vecs[new], [[owner]] * len(new), edges))
        if existing:
            touched = {int(r["id"]): r for r in existing.values()}
            full = self.table.search().where(f"id IN ({', '.join(map(str, touched))})").to_arrow().to_pylist()
            for r in full:
                if owner not in r["owners"]:
                    r["owners"] = list(r["owners"]) + [owner]
                r["edges"] = list(r["edges"]) + [o for o in uniq if o != r["id"] and o not in r["edges"]]
            rows = pa.Table.from_pylist(full, schema=_schema(self.dim))
            self.table.merge_insert("id").when_matched_update_all().execute(rows)

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        # No transactions: a round is a loop of deposits (later ones see earlier ones).
        for owner, statements, vectors in items:
            self.deposit(owner, statements, vectors)

    # -- recall ----------------------------------------------------------------

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        where = f"array_has_any(owners, [{_sql_str(owner)}])"
        r = self._search(np.asarray(query, np.float32), k, where, ["id", "text", "edges"])
        hits = [int(i) for i in r["id"].to_pylist()]
        neighbours = {nb: None for es in r["edges"].to_pylist() for nb in es if nb not in hits}
        if neighbours:
            ids = ", ".join(map(str, neighbours))
            self.table.search().where(f"id IN ({ids}) AND {where}").select(["id", "text"]).to_arrow()
        return hits

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        self.table = self.db = None

    def open(self) -> None:
        self.db = lancedb.connect(self.path)
        self.table = self.db.open_table(TABLE)

    def probe(self, query: np.ndarray) -> None:
        self.recall("all", query, 5)
