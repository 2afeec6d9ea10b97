"""``ConsensusStorage``: a CrewAI 1.x memory ``StorageBackend`` on the consensus store.

CrewAI's ``Memory`` embeds, scopes and consolidates; this backend keeps its
records. What it adds is the owner set: when two agents of a crew save the
same event, the store's judge merges the two saves into one record that both
own (docs/integrations-crewai.md gives the whole mapping):

- **owner and scope** (`.crewai_views`): the owner is the agent named by
  the ``agent/<role>`` segment CrewAI's executor puts in the scope path
  (else the record's ``source``, else ``default_owner``); records merge only
  within the path above that segment, so crews with different root scopes
  never merge;
- **one CrewAI record per (record, owner)**: each owner's view keeps its own
  id, scope, categories, metadata, importance, times, source and privacy;
  reads show each store record once, through its oldest view that passes
  the filters, with ``metadata["agentsensus.owners"]`` listing the owners
  when there are two or more;
- **reads are crew-wide**, as CrewAI's own storages are: ``search`` and the
  listings see every owner's views under the scope prefix;
- **an id names one owner's view**: ``update`` rewrites that owner's words
  (other owners of the record keep theirs), ``delete`` makes that owner
  forget the record, which is deleted when no owner is left;
- scores are LanceDB's, ``1 / (1 + squared L2 distance)``, on a store of
  metric ``l2sq`` (CrewAI saves zero vectors for records it could not
  embed, which metric ``cos`` refuses).

Plug it in with `install` (CrewAI's storage factory) or pass it as
``Memory(storage=ConsensusStorage(...))``. Needs CrewAI only when used:
``pip install 'agentsensus[crewai]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime
import os
import threading
import uuid
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np

from ..store import Store
from . import open_stores
from .crewai_views import OWNERS_KEY, fields_of, owner_and_scope, scope_clauses, under, view_of

__all__ = ["ConsensusStorage", "install", "uninstall", "acting_as", "SPEC_PREFIX"]

#: A ``Memory(storage="agentsensus:PATH")`` spec names a consensus store at PATH.
SPEC_PREFIX = "agentsensus:"

# The candidate floor of a store this backend creates: a squared L2 distance
# of 0.35, LanceDB's score 0.74 (unit vectors 0.3 apart).
_L2SQ_FLOOR = -0.35

# The dimension of a store whose first save has no embedding (LanceDB's
# DEFAULT_VECTOR_DIM, text-embedding-3-large's).
_DEFAULT_DIM = 3072

_RUN = 256

_acting: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("agentsensus_crewai_acting", default=None)


@contextlib.contextmanager
def acting_as(owner: str) -> Iterator[None]:
    """Saves and updates inside the block act as ``owner``, whatever the
    scope path says. CrewAI's save pool and encoding flow copy the caller's
    context, so ``with acting_as("writer"): memory.remember(...)`` reaches
    the backend. An ``update`` of another owner's record made so does not
    rewrite that owner's words: the new content is deposited as ``owner``
    (joining the record when the judge finds it the same)."""
    if not isinstance(owner, str) or not owner.strip():
        raise ValueError(f"owner must be a non-empty str, got {owner!r}")
    token = _acting.set(owner)
    try:
        yield
    finally:
        _acting.reset(token)


def _crewai_types() -> tuple[Any, Any, Any]:
    from crewai.memory.storage.backend import EmbeddingDimensionMismatchError
    from crewai.memory.types import MemoryRecord, ScopeInfo

    return MemoryRecord, ScopeInfo, EmbeddingDimensionMismatchError


class ConsensusStorage:
    """A CrewAI ``StorageBackend`` (``crewai.memory.storage.backend``) on a
    consensus store.

    ``store``: an open ``Store`` (the caller closes it) or a path. A path is
    opened with ``store_options`` (shared with the other adapters on it in
    this process; `close` lets go); a new store is created at the
    first save, with the dimension of its embeddings, metric ``l2sq`` and a
    candidate floor of squared distance 0.35 unless ``store_options`` say
    otherwise. ``default_owner`` owns what no agent segment or source claims.
    """

    def __init__(
        self,
        store: Union[Store, str, "os.PathLike[str]"],
        *,
        default_owner: str = "crew",
        **store_options: Any,
    ) -> None:
        if not isinstance(default_owner, str) or not default_owner.strip():
            raise ValueError(f"default_owner must be a non-empty str, got {default_owner!r}")
        self.default_owner = default_owner
        self._lock = threading.RLock()
        self._store: Optional[Store] = None
        self._releases = False
        self._path: Optional[str] = None
        if isinstance(store, Store):
            if store_options:
                raise TypeError("store_options apply only when store is a path")
            open_stores.lend(store)
            self._store = store
        elif isinstance(store, (str, os.PathLike)):
            self._path = os.fspath(store)
            self._options = dict(store_options)
            self._options.setdefault("metric", "l2sq")
            if self._options["metric"] == "l2sq":
                self._options.setdefault("min_similarity", _L2SQ_FLOOR)
            if os.path.exists(os.path.join(self._path, "data.mdb")) or self._options.get("dim") is not None:
                self._open(None)
        else:
            raise TypeError(f"store must be a Store or a path, got {type(store).__name__}")

    # -- the store -------------------------------------------------------------

    @property
    def store(self) -> Optional[Store]:
        """The consensus store, or ``None`` before the first save made it."""
        return self._ready()

    def _open(self, dim: Optional[int]) -> Store:
        with self._lock:
            if self._store is None:
                assert self._path is not None
                options = dict(self._options)
                if dim is not None and options.get("dim") is None:
                    options["dim"] = dim
                if os.path.exists(os.path.join(self._path, "data.mdb")):
                    options.pop("dim", None)  # the store's own; a mismatch is refused per vector
                self._store, self._releases = open_stores.acquire(self._path, options)
            return self._store

    def close(self) -> None:
        """Lets go of the store when this backend opened it by path (the last
        adapter on the path closes it); calling it again does nothing. Used
        again, the backend opens the store again (CrewAI's ``Memory.close``
        closes its storage, and its records stay readable)."""
        with self._lock:
            if self._releases and self._store is not None:
                self._releases = False
                open_stores.release(self._store)
                self._store = None

    def _ready(self) -> Optional[Store]:
        """The open store; ``None`` when there is none yet at the path."""
        with self._lock:
            if self._store is None and self._path is not None:
                if os.path.exists(os.path.join(self._path, "data.mdb")):
                    return self._open(None)
            return self._store

    def _vector(self, embedding: Any, dim: int) -> np.ndarray:
        _, _, Mismatch = _crewai_types()
        if not embedding:
            return np.zeros(dim, dtype=np.float32)  # as LanceDB stores a record without one
        if len(embedding) != dim:
            raise Mismatch(dim, len(embedding))
        return np.asarray(embedding, dtype=np.float32)

    def _score(self, store: Store, raw: Optional[float]) -> float:
        value = float(raw or 0.0)
        if store.metric == "l2sq":
            return 1.0 / (1.0 + max(0.0, -value))
        return value

    def _owners(self, store: Store) -> list[str]:
        return list(store._handles().engine.owner_names())

    def _probe(self, store: Store) -> np.ndarray:
        return np.full(store.dim, 1.0 / np.sqrt(store.dim), dtype=np.float32)

    def _locate(self, store: Store, record_id: str) -> Optional[tuple[int, str, dict[str, Any]]]:
        """(record, owner, view) of the view whose id is ``record_id``."""
        where = {"id": str(record_id)}
        probe = self._probe(store)
        for owner in self._owners(store):
            hits = store.recall(owner, probe, k=1, expand=False, where=where)
            if hits and hits[0].metadata:
                return hits[0].id, owner, hits[0].metadata
        return None

    def _views(self, store: Store, prefix: Optional[str]) -> Iterator[tuple[int, str, dict[str, Any], Any]]:
        """Every (record, owner, view, row) under ``prefix``, owner by owner."""
        for owner in self._owners(store):
            for rid in store.owned(owner):
                try:
                    m = store.get(rid, owner=owner)
                except KeyError:
                    continue  # forgotten since owned() listed it
                view = m.metadata
                if view and "created_at" in view and under(view.get("path", "/"), prefix):
                    yield rid, owner, view, m

    def _embedding(self, store: Store, rid: int) -> list[float]:
        rows, vectors = store._handles().engine.dump(rid - 1, 1)
        if not rows or rows[0][0] != rid:
            return []
        return [float(x) for x in vectors[0].tolist()]

    def _record(self, store: Store, rid: int, text: str, owners: Any, view: dict[str, Any]) -> Any:
        MemoryRecord, _, _ = _crewai_types()
        fields = fields_of(view)
        if len(owners) > 1:
            fields["metadata"][OWNERS_KEY] = sorted(owners)
        return MemoryRecord(content=text, embedding=self._embedding(store, rid), **fields)

    # -- writes ------------------------------------------------------------------

    def save(self, records: list[Any]) -> None:
        """Deposits each record as its owner (see the module's rule): words
        the store's judge finds the same as a record of the same scope join
        it, the owner added to its owner set; the record's view is the
        owner's metadata of it (one per owner: words the owner already held
        replace its earlier view, whose id no longer answers). The batch's
        embeddings and metadata are checked before anything is written."""
        if not records:
            return
        _, _, Mismatch = _crewai_types()
        dims = {len(r.embedding) for r in records if r.embedding}
        with self._lock:
            store = self._ready()
            if store is None:
                if len(dims) > 1:
                    first = next(len(r.embedding) for r in records if r.embedding)
                    other = next(len(r.embedding) for r in records if r.embedding and len(r.embedding) != first)
                    raise Mismatch(first, other)
                store = self._open(next(iter(dims), None) or _DEFAULT_DIM)
            vectors = [self._vector(r.embedding, store.dim) for r in records]
            views = [view_of(r) for r in records]  # refuses non-JSON metadata before any write
            acting = _acting.get()
            # One transaction per run of at most _RUN records of one store
            # scope (a batch names one scope, and its staged records are
            # compared pairwise); later records see earlier ones.
            # Items (owner, statements, vectors, metadata): deposit_many takes a 4th element.
            runs: list[tuple[str, list[Any]]] = []
            for r, vector, view in zip(records, vectors, views):
                owner, scope = owner_and_scope(r.scope, r.source, self.default_owner, acting)
                if not runs or runs[-1][0] != scope or len(runs[-1][1]) >= _RUN:
                    runs.append((scope, []))
                runs[-1][1].append((owner, [r.content], vector[None, :], view))
            for scope, items in runs:
                store.deposit_many(items, scope=scope)

    def update(self, record: Any) -> None:
        """Rewrites the view ``record.id`` names to ``record`` (content,
        embedding and fields), as the owner of that view: other owners of the
        record keep their words (``Store.update``). Inside
        `acting_as` another owner, the content is deposited as that
        owner instead. An id no view answers to is saved as a new record."""
        with self._lock:
            store = self._ready()
            found = None if store is None else self._locate(store, record.id)
            acting = _acting.get()
            if store is None or found is None:
                self.save([record])
                return
            rid, owner, _ = found
            if acting is not None and acting != owner:
                fresh = record.model_copy(update={"id": str(uuid.uuid4())})
                self.save([fresh])
                return
            vector = (
                self._vector(record.embedding, store.dim)
                if record.embedding
                else np.asarray(self._embedding(store, rid) or np.zeros(store.dim), dtype=np.float32)
            )
            view = view_of(record)
            store.update(rid, record.content, owner=owner, vector=vector, metadata=view)

    def delete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[list[str]] = None,
        record_ids: Optional[list[str]] = None,
        older_than: Optional[datetime.datetime] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
    ) -> int:
        """The owners of the views that pass every filter given forget their
        records (a record goes when its last owner does); returns how many
        records lost a view. ``record_ids`` names views by id."""
        with self._lock:
            store = self._ready()
            if store is None:
                return 0
            targets: set[tuple[int, str]] = set()
            if record_ids is not None:
                for record_id in record_ids:
                    found = self._locate(store, record_id)
                    if found is not None and self._passes(found[2], scope_prefix, categories, metadata_filter):
                        if older_than is None or _before(found[2], older_than):
                            targets.add((found[0], found[1]))
            else:
                for rid, owner, view, _ in self._views(store, scope_prefix):
                    if self._passes(view, None, categories, metadata_filter):
                        if older_than is None or _before(view, older_than):
                            targets.add((rid, owner))
            for rid, owner in sorted(targets):
                try:
                    store.forget(owner, rid)
                except KeyError:
                    pass  # gone already
            return len({rid for rid, _ in targets})

    def reset(self, scope_prefix: Optional[str] = None) -> None:
        """Forgets every view under ``scope_prefix``; ``None`` or ``"/"``
        empties the store (``Store.reset``), whose dimension stays."""
        with self._lock:
            store = self._ready()
            if store is None:
                return
            if scope_prefix is None or not scope_prefix.strip("/"):
                store.reset()
                return
            self.delete(scope_prefix=scope_prefix)

    # -- reads -------------------------------------------------------------------

    @staticmethod
    def _passes(
        view: dict[str, Any],
        prefix: Optional[str],
        categories: Optional[list[str]],
        metadata_filter: Optional[dict[str, Any]],
    ) -> bool:
        if prefix is not None and not under(view.get("path", "/"), prefix):
            return False
        if categories and not any(c in (view.get("categories") or []) for c in categories):
            return False
        meta = view.get("metadata") or {}
        return not metadata_filter or all(meta.get(k) == v for k, v in metadata_filter.items())

    def get_record(self, record_id: str) -> Any:
        """The record the view ``record_id`` names, as that view shows it, or ``None``."""
        store = self._ready()
        if store is None:
            return None
        found = self._locate(store, record_id)
        if found is None:
            return None
        rid, _, view = found
        row = store.get(rid)
        return self._record(store, rid, row.text, row.owners, view)

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[list[str]] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """The records nearest ``query_embedding`` with a view under
        ``scope_prefix`` passing the filters, whoever owns them, best first:
        each record once, as its oldest passing view shows it."""
        store = self._ready()
        if store is None or limit <= 0:
            return []
        query = self._vector(query_embedding, store.dim)
        if not query.any() and store.metric == "cos":
            return []
        k = limit * 3 if (categories or metadata_filter) else limit
        best: dict[int, tuple[float, dict[str, Any], Any]] = {}
        for owner in self._owners(store):
            for where in scope_clauses(scope_prefix):
                for m in store.recall(owner, query, k=k, expand=False, where=where):
                    view = m.metadata
                    if not view or not self._passes(view, None, categories, metadata_filter):
                        continue
                    score = self._score(store, m.score)
                    held = best.get(m.id)
                    if held is None or view["created_at"] < held[1]["created_at"]:
                        best[m.id] = (score, view, m)
        ranked = sorted(best.items(), key=lambda kv: -kv[1][0])
        out = []
        for rid, (score, view, m) in ranked:
            if score >= min_score:
                out.append((self._record(store, rid, m.text, m.owners, view), score))
            if len(out) >= limit:
                break
        return out

    def _listing(self, prefix: Optional[str]) -> list[tuple[int, dict[str, Any], Any]]:
        """Each record with a view under ``prefix`` once: (record, its oldest
        view there, a row of it)."""
        store = self._ready()
        if store is None:
            return []
        oldest: dict[int, tuple[dict[str, Any], Any]] = {}
        for rid, _, view, m in self._views(store, prefix):
            held = oldest.get(rid)
            if held is None or view["created_at"] < held[0]["created_at"]:
                oldest[rid] = (view, m)
        return [(rid, v, m) for rid, (v, m) in oldest.items()]

    def list_records(self, scope_prefix: Optional[str] = None, limit: int = 200, offset: int = 0) -> list[Any]:
        """Records with a view under ``scope_prefix``, newest first (by that
        view's ``created_at``), ``offset`` skipped, at most ``limit``."""
        store = self._ready()
        if store is None or limit <= 0 or offset < 0:
            return []
        rows = sorted(self._listing(scope_prefix), key=lambda r: r[1]["created_at"], reverse=True)
        return [self._record(store, rid, m.text, m.owners, v) for rid, v, m in rows[offset : offset + limit]]

    def get_scope_info(self, scope: str) -> Any:
        """Records under ``scope``, their categories, oldest and newest
        ``created_at``, and the scope's immediate children."""
        _, ScopeInfo, _ = _crewai_types()
        path = "/" + "/".join(p for p in (scope or "").split("/") if p)
        rows = self._listing(path)
        if not rows:
            return ScopeInfo(path=path, record_count=0, categories=[], child_scopes=[])
        times = [fields_of(v)["created_at"] for _, v, _ in rows]
        cats = sorted({c for _, v, _ in rows for c in (v.get("categories") or [])})
        return ScopeInfo(
            path=path,
            record_count=len(rows),
            categories=cats,
            oldest_record=min(times),
            newest_record=max(times),
            child_scopes=self._children(path),
        )

    def _children(self, parent: str) -> list[str]:
        store = self._ready()
        if store is None:
            return []
        base = "/" + "/".join(p for p in (parent or "").split("/") if p)
        head = base if base.endswith("/") else base + "/"
        out = set()
        for _, _, view, _ in self._views(store, base):
            path = view.get("path", "/")
            if path.startswith(head) and path != base:
                out.add(head + path[len(head) :].split("/", 1)[0])
        return sorted(out)

    def list_scopes(self, parent: str = "/") -> list[str]:
        """The immediate child scopes under ``parent`` that hold views."""
        return self._children(parent)

    def list_categories(self, scope_prefix: Optional[str] = None) -> dict[str, int]:
        """Category -> how many records under ``scope_prefix`` carry it (in
        the view a listing shows)."""
        counts: dict[str, int] = {}
        for _, view, _ in self._listing(scope_prefix):
            for c in view.get("categories") or []:
                counts[c] = counts.get(c, 0) + 1
        return counts

    def count(self, scope_prefix: Optional[str] = None) -> int:
        """How many records have a view under ``scope_prefix`` (a record two
        agents share counts once)."""
        return len(self._listing(scope_prefix))

    # -- async -------------------------------------------------------------------

    async def asave(self, records: list[Any]) -> None:
        """`save` in a worker thread."""
        await asyncio.to_thread(self.save, records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: Optional[str] = None,
        categories: Optional[list[str]] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[Any, float]]:
        """`search` in a worker thread."""
        return await asyncio.to_thread(
            self.search, query_embedding, scope_prefix, categories, metadata_filter, limit, min_score
        )

    async def adelete(
        self,
        scope_prefix: Optional[str] = None,
        categories: Optional[list[str]] = None,
        record_ids: Optional[list[str]] = None,
        older_than: Optional[datetime.datetime] = None,
        metadata_filter: Optional[dict[str, Any]] = None,
    ) -> int:
        """`delete` in a worker thread."""
        return await asyncio.to_thread(self.delete, scope_prefix, categories, record_ids, older_than, metadata_filter)


def _before(view: dict[str, Any], cutoff: datetime.datetime) -> bool:
    created: datetime.datetime = fields_of(view)["created_at"]
    return created < cutoff


def install(
    default: Union[Store, str, "os.PathLike[str]", None] = None,
    *,
    paths: bool = False,
    default_owner: str = "crew",
    **store_options: Any,
) -> Callable[[str], Optional[ConsensusStorage]]:
    """Registers CrewAI's memory storage factory
    (``crewai.memory.storage.factory.set_memory_storage_factory``) so that
    ``Memory`` builds a `ConsensusStorage`: for ``"agentsensus:PATH"``
    always; for CrewAI's default spec ``"lancedb"`` (what ``Crew(memory=True)``
    uses) when ``default`` (a ``Store`` or path) is given; for any other
    string (a path) when ``paths=True``. ``"qdrant-edge"`` and the rest go to
    CrewAI's own storages. Returns the factory; `uninstall` removes it."""
    from crewai.memory.storage.factory import set_memory_storage_factory

    def factory(spec: str) -> Optional[ConsensusStorage]:
        if spec.startswith(SPEC_PREFIX):
            return ConsensusStorage(spec[len(SPEC_PREFIX) :], default_owner=default_owner, **store_options)
        if spec == "lancedb" and default is not None:
            if isinstance(default, Store):
                return ConsensusStorage(default, default_owner=default_owner)
            return ConsensusStorage(default, default_owner=default_owner, **store_options)
        if paths and spec not in ("lancedb", "qdrant-edge"):
            return ConsensusStorage(spec, default_owner=default_owner, **store_options)
        return None

    set_memory_storage_factory(factory)
    return factory


def uninstall() -> None:
    """Restores CrewAI's built-in storage selection."""
    from crewai.memory.storage.factory import set_memory_storage_factory

    set_memory_storage_factory(None)
