"""``StoreActor``: one store as a Ray actor, on the node that holds its files.

Threads, not asyncio: methods run in two concurrency groups, ``read``
(several at once: recall, get, owned, stats, merges, fence reads) and
``write`` (one at a time: deposits, forget, checkpoint, fence writes), so
readers never wait for a judge and writers are serialized in the actor, as
the store's single-writer design wants. The store itself is thread-safe
(its engine releases the GIL and ``close`` waits for calls in flight).

Judges run inside the actor, in the writer thread: pass ``judge=`` (any
callable that pickles, e.g. a module-level function or a picklable object)
to ``StoreActor.remote`` or per call. An LLM judge's model calls therefore
leave from the store's node, and a slow judge holds the one writer: that is
what `agentsensus.ray.ShardedStore` spreads over shards.

Placement: the store's files live on one node's local disk (LMDB must not
live on a network filesystem). Start that node with the custom resource
`node_resource` names (``ray start --resources='{"agentsensus-node:NAME": 1}'``)
and place the actor with ``StoreActor.options(**on_node(NAME))``; a
restarted actor (``max_restarts``) comes back on that node, or on a
replacement node started with the same resource and the same disk.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any, Callable, Sequence, TypeVar

import ray

from ..records import Deposit, Memory, Merge, Stats
from ..store import Store

__all__ = ["StoreActor", "node_resource", "on_node", "READ", "WRITE"]

READ, WRITE = "read", "write"
#: Reads that may run at once in one actor.
READERS = 4


def node_resource(name: str) -> str:
    """The custom resource that marks the node holding store files ``name``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"node name must be a non-empty str, got {name!r}")
    return f"agentsensus-node:{name}"


def on_node(name: str) -> dict[str, Any]:
    """``.options(...)`` that place an actor on the node carrying
    `node_resource` ``(name)`` (a sliver of it, so many actors fit)."""
    return {"resources": {node_resource(name): 0.001}}


# Reads wait for a restarting actor and retry (they change nothing; the
# restarts, max_restarts, bound it); writes do not: a write that may have
# committed before the actor died is the caller's to resubmit.
_F = TypeVar("_F", bound=Callable[..., Any])
_read: Callable[[_F], _F] = ray.method(concurrency_group=READ, max_task_retries=-1)
_write: Callable[[_F], _F] = ray.method(concurrency_group=WRITE)


@ray.remote(concurrency_groups={READ: READERS, WRITE: 1}, max_restarts=3, max_task_retries=0, num_cpus=0)
class StoreActor:
    """The store behind a `agentsensus.ray.RemoteStore`; built as
    ``StoreActor.remote(path, checkpoint_every=0, **store_options)`` with
    `agentsensus.Store`'s options (``judge`` and ``embed`` must
    pickle). ``checkpoint_every``: after this many write calls, save the
    index (``Store.checkpoint``), so a restarted actor reopens without
    replaying the whole journal; 0 never (``close`` still saves it)."""

    def __init__(self, path: str, *, checkpoint_every: int = 0, **store_options: Any) -> None:
        if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 0:
            raise ValueError(f"checkpoint_every must be an int >= 0, got {checkpoint_every!r}")
        self._store = Store(path, **store_options)
        self._path, self._options = path, store_options  # to reopen it after copy_to
        self._every = checkpoint_every
        self._writes = 0

    def _wrote(self) -> None:
        self._writes += 1
        if self._every and self._writes % self._every == 0:
            self._store.checkpoint()

    # -- writes (one at a time) -----------------------------------------------

    @_write
    def deposit(self, owner: str, statements: Sequence[str], vectors: Any, round: int, judge: Any) -> Deposit:
        try:
            return self._store.deposit(owner, statements, vectors, round=round, judge=judge)
        finally:
            self._wrote()

    @_write
    def deposit_many(
        self,
        items: list[tuple[str, Sequence[str], Any]],
        round: int,
        judge: Any,
        batch_key: Any = None,
        judge_per_item: bool = False,
    ) -> list[Deposit]:
        try:
            return self._store.deposit_many(
                items, round=round, judge=judge, judge_per_item=judge_per_item, batch_key=batch_key
            )
        finally:
            self._wrote()

    @_write
    def adeposit(self, owner: str, statements: Sequence[str], vectors: Any, round: int, judge: Any) -> Deposit:
        # An event loop of this call's own: the judge may be a coroutine function.
        try:
            return asyncio.run(self._store.adeposit(owner, statements, vectors, round=round, judge=judge))
        finally:
            self._wrote()

    @_write
    def forget(self, owner: str, id: int) -> None:
        try:
            self._store.forget(owner, id)
        finally:
            self._wrote()

    @_write
    def checkpoint(self) -> int:
        return self._store.checkpoint()

    @_write
    def fence_write(self, op: str, *args: Any) -> int:
        if op not in ("publish", "derive", "observe"):
            raise ValueError(f"unknown fence write {op!r}")
        return int(getattr(self._store.fence, op)(*args))

    @_write
    def copy_to(self, dest: str) -> Any:
        """Closes the store (so its files are whole), copies its directory to
        ``dest`` on this node and reopens it, as a local fork does; returns the
        store's judge, whose state a store opened at ``dest`` goes on from."""
        self._store.close()
        try:
            shutil.copytree(self._path, dest)
        finally:
            self._store = Store(self._path, **self._options)
        return self._options.get("judge")

    @_write
    def close(self) -> None:
        """Saves the index and closes the store; the actor is of no use after."""
        self._store.close()

    # -- reads (several at once) ----------------------------------------------

    @_read
    def info(self) -> dict[str, Any]:
        s = self._store
        return {
            "path": s.path,
            "dim": s.dim,
            "metric": s.metric,
            "readonly": s.readonly,
            "closed": s.closed,
            "candidates": s.candidates,
            "min_similarity": s.min_similarity,
            "pid": os.getpid(),
            "node": ray.get_runtime_context().get_node_id(),
        }

    @_read
    def recall(self, owner: str, query: Any, k: int, expand: bool) -> list[Memory]:
        return self._store.recall(owner, query, k=k, expand=expand)

    @_read
    def recall_many(self, queries: list[tuple[str, Any]], k: int, expand: bool) -> list[list[Memory]]:
        # Store.recall_many: the same answers as recall per pair, on one snapshot, across threads
        return self._store.recall_many(queries, k=k, expand=expand)

    @_read
    def recall_hits(
        self, queries: list[tuple[str, Any]], k: int, expand: bool
    ) -> list[tuple[list[Memory], list[list[Memory]]]]:
        """For a sharded recall: each query's k hits and, per hit, every
        neighbor the owner owns (ascending id), so the caller can merge hits
        over shards first and expand after, as one store would."""
        out: list[tuple[list[Memory], list[list[Memory]]]] = []
        for owner, q in queries:
            hits = self._store.recall(owner, q, k=k, expand=False)
            nbs: list[list[Memory]] = []
            for h in hits:
                row: list[Memory] = []
                if expand:
                    for n in self._store.neighbors(h.id):
                        try:
                            m = self._store.get(n)
                        except KeyError:  # deleted since the recall
                            continue
                        if owner in m.owners:
                            row.append(Memory(m.id, m.text, m.owners, m.round, None, "edge"))
                nbs.append(row)
            out.append((hits, nbs))
        return out

    @_read
    def get(self, id: int) -> Memory:
        return self._store.get(id)

    @_read
    def neighbors(self, id: int) -> list[int]:
        return self._store.neighbors(id)

    @_read
    def get_many(self, ids: list[int]) -> list[Memory]:
        """``get`` of every id, in order (one call for a whole graph)."""
        return [self._store.get(i) for i in ids]

    @_read
    def neighbors_many(self, ids: list[int]) -> list[list[int]]:
        """``neighbors`` of every id, in order."""
        return [self._store.neighbors(i) for i in ids]

    @_read
    def owned(self, owner: str) -> list[int]:
        return self._store.owned(owner)

    @_read
    def owner_names(self) -> list[str]:
        """Every owner the store has seen, first seen first."""
        return list(self._store._handles().engine.owner_names())

    @_read
    def stats(self) -> Stats:
        return self._store.stats()

    @_read
    def merges(self) -> list[Merge]:
        return list(self._store.merges())

    @_read
    def verify(self) -> list[str]:
        return self._store.verify()

    @_read
    def fence_read(self, op: str, *args: Any, **kwargs: Any) -> Any:
        if op not in ("head", "owner", "value", "keys", "verify", "frontier", "check", "check_all", "answer"):
            raise ValueError(f"unknown fence read {op!r}")
        return getattr(self._store.fence, op)(*args, **kwargs)

    @_read
    def answer(self, owner: str, query: bytes) -> bytes:
        """The owner's side of a Planfence head query (what
        `agentsensus.ray.RayHeadsClient` asks)."""
        return self._store.fence.answer(owner, query)
