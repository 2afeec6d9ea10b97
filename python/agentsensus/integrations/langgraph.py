"""``ConsensusStore``: a LangGraph ``BaseStore`` on the consensus store.

Each namespace maps to an owner (by default its labels joined with ``.``:
LangGraph forbids periods in labels, so the mapping is one to one) and to a
scope (by default its top label). A put deposits the item's indexed texts
(the ``index`` config's ``fields``, or the put's own ``index``) as one
deposit of that owner in that scope: texts that other namespaces of the same
scope already hold as the same fact merge into their records (the store's
judge decides), a namespace of another scope never sees them, and the texts
of one item are joined by affiliation edges. A semantic search recalls, per owner under the prefix, the records
that owner owns, and returns the items whose texts ended in them.

The items themselves (key, JSON value, timestamps, the records their texts
ended in) live in the store's own LMDB environment (see
`langgraph_items`): a record holds text and owners, not values. A put
is one transaction: its deposit and its item row commit together, so they
cannot disagree after a crash. A record an item no longer uses is
forgotten in the same transaction when only its owner held it; one that
other owners share is forgotten right after, in a transaction of its own
(the merge policy picks the text that stays), so a crash between leaves
such a record owned but unused, which searches skip.

``index`` takes LangGraph's ``IndexConfig`` keys (``dims``, ``embed``,
``fields``) and ``distance_type`` (``"cosine"``, ``"inner_product"`` or
``"l2"``, as LangGraph's Postgres store); any other key raises
``ValueError``. ``embed`` may also be an agentsensus embedder
(``embedders.hash``): `ConsensusIndexConfig` types it, so the
documented ``index={"embed": embedders.hash}`` passes ``mypy --strict``.

Needs the ``langgraph`` extra: ``pip install 'agentsensus[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Iterable, Literal, Mapping, NamedTuple, Optional, Sequence, TypedDict, Union, cast

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    validate_op_namespace,
)
from langgraph.store.base.embed import AEmbeddingsFunc, EmbeddingsFunc

from .. import embedders
from .._store.scopes import check_scope
from ..store import Store
from . import open_stores
from .langgraph_items import (
    SQLITE_NAME,
    ItemBatch,
    ItemRow,
    ItemTable,
    join_namespace,
    migrate_sqlite,
    now_us,
    stderr_progress,
)

__all__ = ["ConsensusStore", "ConsensusIndexConfig", "ArrayEmbeddingsFunc"]

OwnerOf = Callable[[tuple[str, ...]], str]

#: An agentsensus embedder's type: texts in, an (n, dim) array out (LangGraph's
#: ``EmbeddingsFunc`` returns ``list[list[float]]``, which an array is not).
ArrayEmbeddingsFunc = Callable[[list[str]], "npt.NDArray[Any]"]


class ConsensusIndexConfig(TypedDict, total=False):
    """LangGraph's ``IndexConfig`` as this store takes it: ``embed`` may also
    be an agentsensus embedder, and ``distance_type`` picks the store's metric."""

    dims: int
    embed: Union[Embeddings, EmbeddingsFunc, AEmbeddingsFunc, ArrayEmbeddingsFunc, str]
    fields: Optional[list[str]]
    distance_type: Literal["cosine", "inner_product", "l2"]


# LangGraph's distance names (its Postgres store's) and the engine's metrics.
_METRICS = {"cosine": "cos", "inner_product": "ip", "l2": "l2sq"}
_INDEX_KEYS = ("dims", "embed", "fields", "distance_type")

# A search asks recall for this many times the items it still needs, and
# widens by this factor while filters or shared records leave it short.
_WIDEN = 4


class _Ask(NamedTuple):
    """One owner's recall for one search: ``k`` records, of which the
    search wants ``want`` items."""

    search: int
    op: SearchOp
    want: int
    qvec: npt.NDArray[np.float32]
    owner: str
    k: int


class _PutPlan:
    """One put to apply: its op, owner, and the (path, text) pairs to index."""

    __slots__ = ("op", "owner", "texts", "scope")

    def __init__(self, op: PutOp, owner: str, texts: list[tuple[str, str]], scope: str = "") -> None:
        self.op = op
        self.owner = owner
        self.texts = texts
        self.scope = scope


class ConsensusStore(BaseStore):
    """A LangGraph ``BaseStore`` whose semantic index is an agentsensus
    `Store`.

    ``store``: an open ``Store`` (it stays the caller's to close) or a path
    (opened here with ``index["dims"]`` and ``store_options``, or shared with
    the adapters already open on it in this process; `close` lets go
    of it, and the last one closes it). ``index``: LangGraph's ``IndexConfig``
    (`ConsensusIndexConfig`); ``embed`` is a LangChain ``Embeddings``,
    a (sync or async) function ``list[str] -> vectors``, or an agentsensus
    embedder (its ``.dim`` stands in for ``dims``); ``fields`` defaults to
    ``["$"]`` (the whole value); ``distance_type`` (``"cosine"``, the
    default, ``"inner_product"`` or ``"l2"``) sets the metric of a new store
    and must match an existing one's. Without ``index`` it is a plain
    key-value store with filtered search (a new store then gets the default
    embedder's dim, 384, so ``embedders.hash`` can index it later).
    ``owner``: maps a namespace to the owner name (default: labels joined
    by ``.``). ``scope``: maps a namespace to the scope its texts are
    deposited in (default: its top label, so ``("alice", "memories")`` and
    ``("bob", "memories")`` never merge nor see each other's texts; return
    ``""`` for one scope shared by all). The items live in the store itself. ``items_path``: the
    SQLite item file of an earlier version (default: ``langgraph.sqlite3``
    in the store's directory); when it exists, a writable open moves its
    items into the store (showing progress on stderr) and renames it to
    ``<name>.migrated``, and a read-only open refuses in one line.
    """

    supports_ttl = False

    def __init__(
        self,
        store: Union[Store, str, "os.PathLike[str]"],
        *,
        index: Optional[Union[IndexConfig, ConsensusIndexConfig]] = None,
        owner: Optional[OwnerOf] = None,
        scope: Optional[OwnerOf] = None,
        items_path: Optional[str] = None,
        **store_options: Any,
    ) -> None:
        config = _check_index(index)
        self.index_config: Optional[ConsensusIndexConfig] = config
        self.embeddings: Any = None
        self._fields: list[str] = ["$"]
        dims: Optional[int] = None
        distance = config.get("distance_type") if config is not None else None
        metric = _METRICS[distance] if distance is not None else None
        if config is not None:
            embed = config["embed"]
            # An array-returning embedder works through LangGraph's wrapper as is
            # (the adapter reads its results with np.asarray): only the type differs.
            self.embeddings = ensure_embeddings(cast(Union[Embeddings, EmbeddingsFunc, AEmbeddingsFunc, str], embed))
            self._fields = list(config.get("fields") or ["$"])
            dims = config.get("dims") or getattr(embed, "dim", None)
        if isinstance(store, Store):
            if store_options:
                raise TypeError("store_options apply only when store is a path")
            if dims is not None and store.dim != dims:
                raise ValueError(f"index dims={dims} does not match the store's dim={store.dim}")
            if metric is not None and store.metric != metric:
                raise ValueError(f"distance_type={distance!r} needs metric {metric!r}; the store's is {store.metric!r}")
            open_stores.lend(store)
            self.store, self._owns_store = store, False
        else:
            if metric is not None:
                store_options.setdefault("metric", metric)
            if dims is None and config is None and not os.path.exists(os.path.join(os.fspath(store), "data.mdb")):
                # A plain key-value store deposits nothing, but a new store
                # needs a dim: the default embedder's, so it can be indexed later.
                dims = embedders.hash.dim
            store_options.setdefault("dim", dims)
            if config is not None and embedders.name_of(config["embed"]) is not None:
                # A named embedder (embedders.hash...) is recorded with a new store.
                store_options.setdefault("embed", config["embed"])
            # Shared with the other adapters on this path in this process (the
            # engine opens a store once per process); released by close().
            self.store, self._owns_store = open_stores.acquire(store, store_options)
        self._owner: OwnerOf = owner or join_namespace
        self._scope: OwnerOf = scope or _top_label
        self.items = ItemTable(self.store)
        try:
            _migrate(self.store, items_path or os.path.join(self.store.path, SQLITE_NAME))
        except BaseException:
            if self._owns_store:
                self._owns_store = False
                open_stores.release(self.store)
            raise

    def close(self) -> None:
        """Lets go of the store when it was opened here by path (the last
        adapter on that path closes it). Calling it again does nothing."""
        if self._owns_store:
            self._owns_store = False
            open_stores.release(self.store)

    def __enter__(self) -> "ConsensusStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def owner_of(self, namespace: Sequence[str]) -> str:
        """The owner name a namespace maps to."""
        return self._owner(tuple(namespace))

    def scope_of(self, namespace: Sequence[str]) -> str:
        """The scope a namespace's texts are deposited in."""
        return check_scope(self._scope(tuple(namespace)))

    # -- batches ----------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ``ops`` in order of results; reads see the state before the
        batch's puts, and the last put to a key wins (as ``InMemoryStore``).
        All puts, their deposits and their item rows, go to the store in one
        transaction."""
        results, plans, searches = self._prepare(list(ops))
        queries = self._queries(searches)
        qvecs = {q: np.asarray(self.embeddings.embed_query(q), dtype=np.float32) for q in queries}
        self._run_searches(searches, qvecs, results)
        if plans:
            texts = [t for p in plans for _, t in p.texts]
            vecs = self._embed_texts(texts)
            batch = self._item_batch(plans)
            if texts:
                items = [self.store._item(o, s, v, 0, sc) for o, s, v, sc in self._deposit_items(plans, vecs)]
                self.store._run(items, None, False, batch)
            else:
                batch.unused = self.items.write(batch)
            self._forget_unused(batch.unused)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` for asyncio: embedding uses the async embedder, the puts
        go through the store's async deposit path (so its judge may be a
        coroutine function), and engine work runs in worker threads."""
        results, plans, searches = await asyncio.to_thread(self._prepare, list(ops))
        queries = self._queries(searches)
        qvecs: dict[str, Any] = {}
        if queries:
            found = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
            qvecs = {q: np.asarray(v, dtype=np.float32) for q, v in zip(queries, found)}
        await asyncio.to_thread(self._run_searches, searches, qvecs, results)
        if plans:
            texts = [t for p in plans for _, t in p.texts]
            batch = self._item_batch(plans)
            if texts:
                vecs = np.asarray(await self.embeddings.aembed_documents(texts), dtype=np.float32)
                deposits = self._deposit_items(plans, vecs)
                items = await asyncio.to_thread(lambda: [self.store._item(o, s, v, 0, sc) for o, s, v, sc in deposits])
                await self.store._arun(items, None, False, batch)
            else:
                batch.unused = await asyncio.to_thread(self.items.write, batch)
            await asyncio.to_thread(self._forget_unused, batch.unused)
        return results

    # -- preparing --------------------------------------------------------------

    def _prepare(self, ops: list[Op]) -> tuple[list[Result], list[_PutPlan], list[tuple[int, SearchOp]]]:
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        searches: list[tuple[int, SearchOp]] = []
        for i, op in enumerate(ops):
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                row = self.items.get(op.namespace, op.key)
                results.append(_item(row) if row else None)
            elif isinstance(op, SearchOp):
                searches.append((i, op))
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            elif isinstance(op, PutOp):
                if not op.namespace:
                    raise InvalidNamespaceError("Namespace cannot be empty.")
                if op.value is not None and not isinstance(op.value, Mapping):
                    raise TypeError(f"PutOp.value must be a mapping or None, got {type(op.value).__name__}")
                puts.pop((op.namespace, op.key), None)  # last write wins, in its own position
                puts[(op.namespace, op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return results, [self._plan(op) for op in puts.values()], searches

    def _plan(self, op: PutOp) -> _PutPlan:
        owner, scope = self.owner_of(op.namespace), self.scope_of(op.namespace)
        if op.value is None or op.index is False or self.embeddings is None:
            return _PutPlan(op, owner, [], scope)
        paths = self._fields if op.index is None else list(op.index)
        texts: list[tuple[str, str]] = []
        for path in paths:
            found = [t for t in get_text_at_path(dict(op.value), path) if t.strip()]
            if len(found) == 1:
                texts.append((path, found[0]))
            else:
                texts.extend((f"{path}.{n}", t) for n, t in enumerate(found))
        return _PutPlan(op, owner, texts, scope)

    def _embed_texts(self, texts: list[str]) -> Optional[np.ndarray]:
        if not texts:
            return None
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float32)

    @staticmethod
    def _deposit_items(plans: list[_PutPlan], vecs: Optional[np.ndarray]) -> list[tuple[str, list[str], Any, str]]:
        items: list[tuple[str, list[str], Any, str]] = []
        at = 0
        for p in plans:
            if p.texts:
                assert vecs is not None
                items.append((p.owner, [t for _, t in p.texts], vecs[at : at + len(p.texts)], p.scope))
                at += len(p.texts)
        return items

    # -- writing ----------------------------------------------------------------

    @staticmethod
    def _item_batch(plans: list[_PutPlan]) -> ItemBatch:
        """The item writes of the plans; a put with texts names its deposit
        (the plans with texts, in order, are the commit's deposits)."""
        now = now_us()
        batch = ItemBatch()
        deposit = 0
        for p in plans:
            value = None if p.op.value is None else dict(p.op.value)
            batch.put(p.op.namespace, p.op.key, value, now, deposit=deposit if p.texts else -1)
            deposit += 1 if p.texts else 0
        return batch

    def _forget_unused(self, unused: Sequence[tuple[str, int]]) -> None:
        """Each owner forgets the records none of its items uses any more
        (the engine found them in the put's transaction)."""
        for owner, record in unused:
            if self.items.items_of(owner, [record], ()):
                continue  # another writer's put took it up meanwhile
            try:
                self.store.forget(owner, record)
            except KeyError:
                pass  # already gone (forgotten through the Store directly)

    # -- reading ----------------------------------------------------------------

    def _queries(self, searches: list[tuple[int, SearchOp]]) -> list[str]:
        if self.embeddings is None:
            return []
        return sorted({op.query for _, op in searches if op.query})

    def _run_searches(
        self, searches: list[tuple[int, SearchOp]], qvecs: Mapping[str, Any], results: list[Result]
    ) -> None:
        """Each search's page into ``results``. A vector search recalls every
        owner under its prefix: the first recalls of all the batch's searches
        and owners go to ``Store.recall_many`` together (one call per k; the
        engine runs them across threads), and an owner left short of items by
        filters or shared records is asked again, wider, with the others
        left short."""
        best: dict[int, dict[tuple[str, str], tuple[float, ItemRow]]] = {}
        asks: list[_Ask] = []
        for i, op in searches:
            qvec = qvecs.get(op.query) if op.query else None
            want = max(op.offset, 0) + max(op.limit, 0)
            if want == 0 or qvec is None:
                results[i] = self._unranked(op, want)
                continue
            best[i] = {}
            q = np.asarray(qvec, dtype=np.float32)
            prefix = tuple(op.namespace_prefix)
            owners = sorted({self.owner_of(ns) for ns in self.items.namespaces() if ns[: len(prefix)] == prefix})
            asks.extend(_Ask(i, op, want, q, owner, want * 2) for owner in owners)
        while asks:
            wider: list[_Ask] = []
            for k in sorted({a.k for a in asks}):
                group = [a for a in asks if a.k == k]
                answers = self.store.recall_many([(a.owner, a.qvec) for a in group], k=k, expand=False)
                for a, hits in zip(group, answers):
                    if self._collect(a, hits, best[a.search]) < a.want and len(hits) >= k:
                        wider.append(a._replace(k=k * _WIDEN))
            asks = wider
        for i, op in searches:
            if i in best:
                results[i] = self._page(op, best[i])

    def _unranked(self, op: SearchOp, want: int) -> list[SearchItem]:
        """A search without a query vector: the items under the prefix that pass the filter, in order."""
        if want == 0:
            return []
        rows = [r for r in self.items.under(op.namespace_prefix) if _matches(r.value, op.filter)]
        return [_search_item(r, None) for r in rows[op.offset : op.offset + op.limit]]

    def _page(self, op: SearchOp, best: dict[tuple[str, str], tuple[float, ItemRow]]) -> list[SearchItem]:
        """The search's page of the items its recalls found, best first."""
        ranked = sorted(best.values(), key=lambda sr: (-sr[0], sr[1].namespace, sr[1].key))
        kept: list[SearchItem] = [_search_item(r, s) for s, r in ranked[op.offset : op.offset + op.limit]]
        if len(kept) < op.limit:
            # As InMemoryStore: items with nothing indexed fill the page, unscored.
            seen = {(join_namespace(r.namespace), r.key) for _, r in ranked}
            for r in self.items.under(op.namespace_prefix):
                if len(kept) >= op.limit:
                    break
                key = (join_namespace(r.namespace), r.key)
                if key not in seen and not r.refs and _matches(r.value, op.filter):
                    kept.append(_search_item(r, None))
        return kept

    def _collect(self, ask: _Ask, hits: list[Any], best: dict[tuple[str, str], tuple[float, ItemRow]]) -> int:
        """Adds the items under the prefix that ``ask.owner``'s hits are
        indexed for and that pass the filter to ``best``; how many there were."""
        op = ask.op
        links = self.items.items_of(ask.owner, [h.id for h in hits], op.namespace_prefix)
        found = 0
        for h in hits:
            for row in links.get(h.id, []):
                key = (join_namespace(row.namespace), row.key)
                if not _matches(row.value, op.filter):
                    continue
                found += 1
                score = self._score(h.score)
                if key not in best or best[key][0] < score:
                    best[key] = (score, row)
        return found

    def _score(self, raw: Optional[float]) -> float:
        """LangGraph's score for a recall score: the engine's ``l2sq`` gives
        minus the squared distance, LangGraph's ``l2`` minus the distance."""
        s = float(raw if raw is not None else 0.0)
        return -float(np.sqrt(max(-s, 0.0))) if self.store.metric == "l2sq" else s

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = self.items.namespaces()
        if op.match_conditions:
            namespaces = [ns for ns in namespaces if all(_does_match(c, ns) for c in op.match_conditions)]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]


def _top_label(namespace: tuple[str, ...]) -> str:
    """The default scope of a namespace: its first label."""
    return namespace[0]


def _check_index(index: Optional[Mapping[str, Any]]) -> Optional[ConsensusIndexConfig]:
    """The index config as given, or a one-line ``ValueError`` naming what
    this store cannot honour."""
    if index is None:
        return None
    if not isinstance(index, Mapping):
        raise TypeError(f"index must be a dict (LangGraph's IndexConfig), got {type(index).__name__}")
    unknown = sorted(set(index) - set(_INDEX_KEYS))
    if unknown:
        raise ValueError(
            f"index option(s) {unknown} are not supported by ConsensusStore (it takes {list(_INDEX_KEYS)})"
        )
    if index.get("embed") is None:
        raise ValueError(
            "index needs 'embed': a LangChain Embeddings, an embedding function or an agentsensus embedder"
        )
    distance = index.get("distance_type")
    if distance is not None and distance not in _METRICS:
        raise ValueError(f"distance_type must be one of {sorted(_METRICS)}, got {distance!r}")
    dims = index.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0):
        raise ValueError(f"index dims must be a positive int, got {dims!r}")
    embed_dim = getattr(index["embed"], "dim", None)
    if dims is not None and isinstance(embed_dim, int) and embed_dim != dims:
        raise ValueError(f"index dims={dims} does not match the embedder's dim={embed_dim}")
    return cast(ConsensusIndexConfig, dict(index))


def _migrate(store: Store, path: str) -> None:
    """Moves an earlier version's SQLite item file into the store (a
    writable store), or refuses a read-only one in one line."""
    if not os.path.exists(path):
        return
    if store.readonly:
        raise ValueError(
            f"{path} holds LangGraph items of an earlier version: open the store writable once "
            f"(ConsensusStore({store.path!r})) to move them into it"
        )
    migrate_sqlite(store, path, progress=stderr_progress(path))


def _item(row: ItemRow) -> Item:
    return Item(
        value=row.value, key=row.key, namespace=row.namespace, created_at=row.created_at, updated_at=row.updated_at
    )


def _search_item(row: ItemRow, score: Optional[float]) -> SearchItem:
    return SearchItem(
        namespace=row.namespace,
        key=row.key,
        value=row.value,
        created_at=row.created_at,
        updated_at=row.updated_at,
        score=score,
    )


# -- LangGraph's filter and namespace-match semantics (as its InMemoryStore) -----


def _matches(value: Mapping[str, Any], filter: Optional[Mapping[str, Any]]) -> bool:
    return not filter or all(_compare(_field(value, k), v) for k, v in filter.items())


def _field(value: Mapping[str, Any], key: str) -> Any:
    """The value a filter key names: a top-level key as InMemoryStore reads
    it; a dotted key that is not one walks nested objects, as SqliteStore's
    JSON paths do (``"user.level"``)."""
    if key in value or "." not in key:
        return value.get(key)
    found: Any = value
    for part in key.split("."):
        if not isinstance(found, Mapping) or part not in found:
            return None
        found = found[part]
    return found


def _compare(item_value: Any, filter_value: Any) -> bool:
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        if not isinstance(item_value, dict):
            return False
        return all(_compare(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(i, f) for i, f in zip(item_value, filter_value))
        )
    return bool(item_value == filter_value)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if value is None:
            return False  # a missing field is not comparable: it does not match
        a, b = float(value), float(operand)
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]
    raise ValueError(f"Unsupported operator: {operator}")


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path))
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(p == "*" or n == p for n, p in pairs)
