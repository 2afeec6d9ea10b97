"""``Store``: the consensus long-term memory of many agents (see
docs/reference/contract.md, "Store")."""

from __future__ import annotations

import asyncio
import os
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generator,
    Iterable,
    Iterator,
    NamedTuple,
    Optional,
    Sequence,
    Union,
)

import numpy as np

from . import _core, judges
from ._deposit.batch_keys import BatchKey, batch_digest, check_batch_key, recorded_result
from ._deposit.passes import GuessModel, Passes, acall_judge, call_judge
from ._deposit.plan import BatchPlanner, Item
from ._store.embedder_setting import no_embed_message, persisted_embed
from ._store.forget_plan import plan_forget
from ._store.lexical_recall import build_lexical_index, fused_recall
from ._store.normalize import text_digest
from ._store.own_words import check_disclosure, own_get, own_recall
from ._store.recall_many import recall_many
from ._store.record_history import history_of
from ._store.record_meta import decode_metadata, encode_where, metadata_per_statement, to_datetime
from ._store.scopes import DEFAULT_SCOPE, check_scope
from ._store.validation import check_k, check_owner, check_query, check_round, check_statements, check_vectors
from ._store.versions import links_of, supersession_events, with_as_of
from .errors import ContentionError, CorruptStoreError, Error
from .io.leftovers import remove_abandoned_imports
from .policies import MergePolicy, resolve
from .records import Change, Deposit, Memory, Merge, Stats

if TYPE_CHECKING:
    from .planfence.fence import Fence

__all__ = ["Store"]

Embed = Callable[[list[str]], Any]
JudgeFn = Callable[[list[judges.JudgeRequest]], Any]

# A deposit whose decisions a concurrent commit invalidated is planned again;
# this many attempts before giving up.
_MAX_ATTEMPTS = 16


class _Handles(NamedTuple):
    """What an open store holds: its engine and its Planfence lineage (both
    ``_core`` objects, dropped together on close)."""

    engine: Any
    lineage: Any


class _DefaultMetric(str):
    """The default ``metric``: a str that is told apart from an explicit
    ``metric="cos"``, so reopening a store of another metric with the
    default does not fail."""


_COS = _DefaultMetric("cos")


class Store:
    """The consensus store: one directory, one LMDB environment, one index.

    Agents that witness the same event write it once: a statement that the
    judge finds equivalent to an existing record merges into it and the
    record's owner set gains the depositor. docs/reference/contract.md
    gives the full contract.

    ``embed`` (a callable ``list[str] -> vectors``) lets deposits and
    queries be texts. A named one (a built-in embedder: ``embedders.hash``,
    ``minilm``, ...) is recorded with the store, and a later open without
    ``embed`` uses it (docs/reference/store.md, "The embedder a store records"); a store created
    with an unnamed callable needs ``embed`` again on every open.

    The tuning keyword arguments: ``merge_policy`` (``"keep_names"``
    (default), ``"keep_shorter"`` or a callable ``(existing, incoming) -> str``),
    ``sync`` (``True``: fsync every commit), ``exact_cutoff`` (owners with
    at most this many records are recalled by an exact scan, and a store of
    at most this many records finds a deposit's candidates so), ``map_size``
    (the initial LMDB map in bytes; it grows by itself when full), and
    ``expansion_search`` (the HNSW search width, default 64: wider finds more
    of the true nearest records of large stores and costs more per search;
    a crowded answer is searched once more, wider, whatever the width;
    docs/performance.md gives recall@5 against width at 1M records), and
    ``judge_sees_owners`` (``False``: the judge's candidates come with empty
    owner sets; ``True`` shows it who owns each).

    ``disclosure`` (default ``"shared"``, the paper's behaviour): what
    ``recall`` and ``get(id, owner=...)`` show an owner of a record others
    share. ``"shared"``: the record's text (which a merge may have taken
    from another owner's words) and its whole owner set. ``"own_words"``:
    only the owner's own statement and the owner alone, so that another
    owner's deposit learns only that it merged and never changes what the
    first owner reads (docs/reference/store.md, "What an owner reads" says exactly what each
    field then holds). A setting of this open, like ``judge_sees_owners``,
    not kept in the store: the statements are kept whatever it is, and
    whoever opens the store chooses what its callers are shown.

    ``scope`` (default ``""``, the default scope): the scope of deposits that
    name none. Records merge, and are shown to the judge, only within their
    scope (docs/reference/store.md, "Scopes"; docs/reliability.md says what that
    protects against and what it does not).

    ``lexical_candidates`` (default 8; 0 turns them off) adds to each
    statement's vector candidates the records the lexical index (BM25 over
    the records' words) ranks highest for it, so the judge also sees a true
    record whose vector a witness's frame pushed below ``min_similarity``.
    A lexical hit's coverage is mutual: its BM25 score over the statement's
    best possible score (that of its own text as a record of the scope),
    and the statement's score for the hit's words over the hit's own best,
    each at most 1; their geometric mean must reach ``lexical_floor``
    (default 0.35), and words most of the scope's records hold weigh nothing
    (docs/reference/store.md, "Hybrid candidates"): the judge is asked only
    about records that could tell the same fact, not about one that shares a
    name or a place and says a fact of its own besides, and a statement that
    meets none becomes a new record without a judge request.
    ``lexical_floor=0`` keeps every hit, every word weighing as BM25 weighs it.
    ``lexical_min_similarity`` (default None: off) leaves out a lexical hit
    whose similarity to the statement is below it (at most ``min_similarity``
    in effect), unless the hit holds most of what the statement says (a BM25
    score of at least half the statement's best); the store does not pick
    one, as the right value depends on
    the embedder and on how far a witness's frame moves a restatement
    (docs/reference/store.md, "Hybrid candidates").
    These are settings of the open, like ``candidates``, not kept in the store;
    the index itself is always kept. A writable open of a store made before
    the index builds it first (progress on stderr for a large store).
    """

    def __init__(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        dim: Optional[int] = None,
        metric: str = _COS,
        judge: Optional[JudgeFn] = None,
        embed: Optional[Embed] = None,
        candidates: int = 8,
        lexical_candidates: int = 8,
        lexical_floor: float = 0.35,
        lexical_min_similarity: Optional[float] = None,
        min_similarity: float = 0.75,
        create: bool = True,
        readonly: bool = False,
        merge_policy: Union[str, MergePolicy] = "keep_names",
        sync: bool = True,
        exact_cutoff: int = 4096,
        map_size: int = 256 << 20,
        expansion_search: int = 64,
        judge_sees_owners: bool = False,
        scope: Optional[str] = None,
        disclosure: str = "shared",
    ) -> None:
        self._engine: Optional[Any] = None
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
        if not isinstance(metric, str) or metric not in _core.Metric.__members__:
            names = ", ".join(repr(m) for m in _core.Metric.__members__)
            raise ValueError(f"metric must be one of {names}, got {metric!r}")
        if embed is not None and not callable(embed):
            raise TypeError("embed must be a callable list[str] -> float32 array")
        if judge is not None and not callable(judge):
            raise TypeError("judge must be a callable list[JudgeRequest] -> list[int | None]")
        if dim is None and embed is not None and getattr(embed, "dim", None) is not None:
            # Embed is a plain callable type: .dim is optional, so mypy needs getattr
            dim = int(getattr(embed, "dim"))  # noqa: B009
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        if dim is not None and dim > _core.MAX_DIM:
            raise ValueError(f"dim must be at most {_core.MAX_DIM}, got {dim}")
        if embed is not None and getattr(embed, "dim", None) not in (None, dim):
            raise ValueError(f"embed.dim={getattr(embed, 'dim')} does not match dim={dim}")  # noqa: B009
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 0:
            raise ValueError(f"candidates must be an int >= 0, got {candidates!r}")
        if isinstance(lexical_candidates, bool) or not isinstance(lexical_candidates, int) or lexical_candidates < 0:
            raise ValueError(f"lexical_candidates must be an int >= 0, got {lexical_candidates!r}")
        if (
            isinstance(lexical_floor, bool)
            or not isinstance(lexical_floor, (int, float))
            or not 0 <= lexical_floor <= 1
        ):
            raise ValueError(f"lexical_floor must be a number from 0 to 1, got {lexical_floor!r}")
        if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)):
            raise TypeError(f"min_similarity must be a number, got {type(min_similarity).__name__}")
        if lexical_min_similarity is not None and (
            isinstance(lexical_min_similarity, bool) or not isinstance(lexical_min_similarity, (int, float))
        ):
            raise TypeError(
                f"lexical_min_similarity must be a number or None, got {type(lexical_min_similarity).__name__}"
            )
        if isinstance(exact_cutoff, bool) or not isinstance(exact_cutoff, int) or exact_cutoff < 0:
            raise ValueError(f"exact_cutoff must be an int >= 0, got {exact_cutoff!r}")
        if (
            isinstance(expansion_search, bool)
            or not isinstance(expansion_search, int)
            or not 1 <= expansion_search <= 4096
        ):
            raise ValueError(f"expansion_search must be an int from 1 to 4096, got {expansion_search!r}")
        if isinstance(map_size, bool) or not isinstance(map_size, int) or map_size < (1 << 16):
            raise ValueError(f"map_size must be an int of at least 65536 bytes, got {map_size!r}")
        self._policy = resolve(merge_policy)
        if not isinstance(judge_sees_owners, bool):
            raise TypeError(f"judge_sees_owners must be a bool, got {type(judge_sees_owners).__name__}")
        #: What recall and get(id, owner=...) show of records others share (_store/own_words.py).
        self.disclosure: str = check_disclosure(disclosure)

        self.path = os.fspath(path)
        if not create and not os.path.isdir(self.path):
            raise FileNotFoundError(f"no store at {self.path} (create=False)")
        if create and not readonly and dim is None and not os.path.exists(os.path.join(self.path, "data.mdb")):
            # Refused before the engine creates the directory and its files:
            # a bad call writes nothing (the engine says the same of an empty data file).
            raise ValueError(f"dim is required to create a store at {self.path}")
        if not readonly:
            remove_abandoned_imports(self.path)  # a killed import's directory beside it
        created = not os.path.exists(os.path.join(self.path, "data.mdb"))
        # One open per store per process, keyed on the directory's identity,
        # is the engine's rule (cpp/src/lmdb/open_registry.hpp): a second open raises Error.
        try:
            self._engine = _core.Engine(
                self.path,
                dim or 0,
                _core.Metric[str(metric)],
                not isinstance(metric, _DefaultMetric),
                create,
                readonly,
                sync,
                exact_cutoff,
                map_size,
                expansion_search,
            )
        except KeyError as e:
            raise FileNotFoundError(str(e.args[0]) if e.args else str(e)) from None
        self.dim: int = self._engine.dim
        self.metric: str = self._engine.metric.name
        self.readonly = readonly
        self.judge: JudgeFn = judge if judge is not None else judges.exact
        #: The embedder's recorded name (embedder_setting.py): None when the
        #: store records none, "" for an unnamed callable.
        self.embedder_name: Optional[str]
        self.embed, self.embedder_name = persisted_embed(
            self._engine, embed, readonly=readonly, created=created, path=self.path
        )
        self.candidates = candidates
        self.min_similarity = float(min_similarity)
        # Candidates are other owners' records: their owner sets reach the
        # judge (an LLM behind an API, maybe) only when the store says so.
        self.judge_sees_owners = judge_sees_owners
        # The scope deposits go to when they name none (docs/reliability.md, "Scopes: who may see what").
        self.scope: str = check_scope(scope) if scope is not None else DEFAULT_SCOPE
        self._lineage = _core.Lineage(
            self._engine
        )  # Planfence tables: opened before any other thread can use the store
        self.lexical_candidates = lexical_candidates
        self.lexical_floor = float(lexical_floor)
        #: A lexical hit's least similarity to the statement (None: any).
        self.lexical_min_similarity: Optional[float] = (
            None if lexical_min_similarity is None else float(lexical_min_similarity)
        )
        if not readonly and not self._engine.lexical_built:
            build_lexical_index(self._engine, self.path)  # a store from before the index, once

    # -- lifecycle -------------------------------------------------------------

    def close(self) -> None:
        """Saves the index and releases the store; calling it again does nothing."""
        engine, self._engine = self._engine, None
        for planfence in ("_fence", "_lineage"):  # they reach the engine: drop them with it
            self.__dict__.pop(planfence, None)
        if engine is not None:
            engine.close()  # waits for calls in flight in other threads

    def checkpoint(self) -> int:
        """Saves the index, caught up to the journal, with the journal position
        it reflects, and returns that position. A later open (after a crash
        too) replays only the journal entries after it; without a checkpoint
        since the last ``close``, a crashed store's next open replays every
        entry since that close. The store stays open; searches wait for the
        save. ``Error`` on a read-only store."""
        if self.readonly:
            raise Error(f"the store at {self.path} is open read-only")
        return int(self._handles().engine.checkpoint())

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._engine is None else f"dim={self.dim}, metric={self.metric!r}"
        return f"Store({self.path!r}, {state})"

    @property
    def closed(self) -> bool:
        """True once ``close`` has run."""
        return self._engine is None

    @property
    def fence(self) -> "Fence":
        """Planfence derivation currency, kept in this store's lineage tables
        (see `agentsensus.planfence.fence.Fence`)."""
        self._handles()  # raises when the store is closed
        if "_fence" not in self.__dict__:
            from .planfence.fence import Fence

            self.__dict__["_fence"] = Fence(self)
        return self.__dict__["_fence"]  # type: ignore[no-any-return]

    def _handles(self) -> _Handles:
        """The open store's engine and lineage: the one way in for the
        modules beside ``Store`` (io/, planfence/); ``Error`` once closed."""
        # close() clears _engine, then drops _lineage: either both are read, or Error.
        engine, lineage = self._engine, self.__dict__.get("_lineage")
        if engine is None or lineage is None:
            raise Error(f"the store at {self.path} is closed")
        return _Handles(engine, lineage)

    def _writable(self) -> Any:
        e = self._handles().engine
        if self.readonly:
            raise Error(f"the store at {self.path} is open read-only")
        return e

    # -- the deposit path ------------------------------------------------------

    def _item(self, owner: Any, statements: Any, vectors: Any, round: int, scope: Optional[str] = None) -> Item:
        owner = check_owner(owner)
        sc = self.scope if scope is None else check_scope(scope)
        texts = check_statements(statements)
        if vectors is None:
            if self.embed is None:
                raise ValueError("vectors is required: " + no_embed_message(self.embedder_name, "pass vectors"))
            vectors = self.embed(texts)
            name = "embed(statements)"
        else:
            name = "vectors"
        vecs = check_vectors(vectors, len(texts), self.dim, self.metric, name)
        return Item(owner, texts, vecs, [text_digest(t, sc) for t in texts], round, scope=sc)

    def _flow(
        self, items: Sequence[Item], per_item: bool = False, item_writes: Any = None, batch: Optional[BatchKey] = None
    ) -> Generator[list[judges.JudgeRequest], Sequence[Optional[int]], list[Deposit]]:
        """The deposit path as a generator: it yields each judge call's
        requests and receives the verdicts, so that the sync and async entry
        points share it. No transaction is open while it is suspended. A
        batch is judged in passes (_deposit/passes.py) unless ``per_item``."""
        engine = self._writable()
        for _ in range(_MAX_ATTEMPTS):
            # A batch key already recorded: the batch committed before (batch_keys.py).
            if batch is not None and (done := recorded_result(engine, batch)) is not None:
                return done
            planner = BatchPlanner(
                engine,
                self.metric,
                self.candidates,
                self.min_similarity,
                self._policy,
                self.judge_sees_owners,
                lexical_candidates=self.lexical_candidates,
                lexical_floor=self.lexical_floor,
                lexical_min_similarity=self.lexical_min_similarity,
            )
            planner.prepare(items)
            if not per_item:  # an attempt after a conflict asks the judge afresh; the guesses learn on
                yield from Passes(self.__dict__.setdefault("_guesses", GuessModel())).plan(planner, items)
            for n, item in enumerate(items if per_item else ()):
                pending, committed = planner.begin(n, item)
                verdicts: Sequence[Optional[int]] = []
                if pending.requests:
                    verdicts = yield pending.requests
                    if not isinstance(verdicts, (list, tuple)):
                        raise TypeError(f"judge must return a list, got {type(verdicts).__name__}")
                planner.finish(pending, committed, verdicts)
            if item_writes is None:
                ok, result = engine.commit(planner.plans, planner.seq, self.min_similarity, batch=batch)
            else:  # LangGraph items ride in the same transaction (integrations/langgraph_items.py)
                ok, result, *unused = engine.commit(
                    planner.plans, planner.seq, self.min_similarity, batch=batch, items=item_writes.rows
                )
                item_writes.unused = unused[0] if ok else []
            if ok:
                return [Deposit(list(ids), merged) for ids, merged in zip(result, planner.merged)]
        raise ContentionError(f"deposit gave up after {_MAX_ATTEMPTS} attempts: concurrent commits kept changing it")

    def _run(
        self,
        items: Sequence[Item],
        judge: Optional[JudgeFn],
        per_item: bool = False,
        item_writes: Any = None,
        batch: Optional[BatchKey] = None,
    ) -> list[Deposit]:
        j = judge if judge is not None else self.judge
        flow = self._flow(items, per_item, item_writes, batch)
        try:
            requests = next(flow)
            while True:
                requests = flow.send(call_judge(j, requests))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def _arun(
        self,
        items: Sequence[Item],
        judge: Optional[JudgeFn],
        per_item: bool = False,
        item_writes: Any = None,
        batch: Optional[BatchKey] = None,
    ) -> list[Deposit]:
        j = judge if judge is not None else self.judge
        flow = self._flow(items, per_item, item_writes, batch)

        # StopIteration cannot cross a thread's future: report completion as a value.
        def step(verdicts: Any) -> tuple[bool, Any]:
            try:
                return False, (next(flow) if verdicts is None else flow.send(verdicts))
            except StopIteration as stop:
                return True, stop.value

        done, value = await asyncio.to_thread(step, None)
        while not done:
            done, value = await asyncio.to_thread(step, await acall_judge(j, value))
        return value  # type: ignore[no-any-return]

    def _batch(
        self, items: Iterable[tuple[str, Sequence[str], Any]], rnd: int, scope: Optional[str] = None
    ) -> list[Item]:
        batch: list[Item] = []
        for n, it in enumerate(items):
            # A 4th element, when present, is the item's metadata (as deposit takes it).
            if not isinstance(it, (tuple, list)) or len(it) not in (3, 4):
                raise TypeError(f"items[{n}] must be a tuple (owner, statements, vectors[, metadata])")
            owner, statements, vectors = it[0], it[1], it[2]
            try:
                item = self._item(owner, statements, vectors, rnd, scope)
                if len(it) == 4:
                    item.metadata = metadata_per_statement(it[3], len(item.statements))
                batch.append(item)
            except (TypeError, ValueError) as e:
                raise type(e)(f"items[{n}]: {e}") from None
        return batch

    def deposit(
        self,
        owner: str,
        statements: Sequence[str],
        vectors: Any = None,
        *,
        round: int = 0,
        judge: Optional[JudgeFn] = None,
        metadata: Any = None,
        scope: Optional[str] = None,
    ) -> Deposit:
        """One agent's write, already split into statements. Each statement
        merges into an existing record the judge names, or becomes a new
        record owned by ``owner``; the records the statements end in are
        joined pairwise by affiliation edges. All or nothing.

        ``metadata``: a JSON object (dict) for every statement, or a list of
        one dict (or ``None``) per statement. It becomes ``owner``'s metadata
        of the record each statement ends in, replacing what ``owner`` gave
        that record before; other owners' metadata of it is theirs and stays.

        ``scope`` (default: the store's ``scope``): the statements merge
        only into records of this scope, and only its records are shown to
        the judge; a new record is of it for good."""
        item = self._item(owner, statements, vectors, check_round(round), scope)
        item.metadata = metadata_per_statement(metadata, len(item.statements))
        return self._run([item], judge)[0]

    def deposit_many(
        self,
        items: Iterable[tuple[str, Sequence[str], Any]],
        *,
        round: int = 0,
        judge: Optional[JudgeFn] = None,
        judge_per_item: bool = False,
        batch_key: Optional[str] = None,
        scope: Optional[str] = None,
    ) -> list[Deposit]:
        """A round of deposits in one transaction (one fsync). Later items see
        earlier ones, as if deposited one by one. The judge is asked in passes:
        one call holds the requests of many items (each naming its owner),
        and further calls only the requests that earlier items of the batch
        changed, usually one or two. ``judge_per_item=True``: one call per
        item with requests, in order. ``batch_key``: the batch is deposited
        exactly once; a later call with the same key returns the first result
        and writes nothing (docs/file-format.md, "Batch keys"). ``scope``: every item's
        scope, as for ``deposit``."""
        key = None if batch_key is None else check_batch_key(batch_key)
        batch = self._batch(items, check_round(round), scope)
        if not batch:
            return []
        bk = None if key is None else (key, batch_digest(batch))
        return self._run(batch, judge, _check_per_item(judge_per_item), batch=bk)

    async def adeposit_many(
        self,
        items: Iterable[tuple[str, Sequence[str], Any]],
        *,
        round: int = 0,
        judge: Optional[JudgeFn] = None,
        judge_per_item: bool = False,
        batch_key: Optional[str] = None,
        scope: Optional[str] = None,
    ) -> list[Deposit]:
        """``deposit_many`` for asyncio: a coroutine judge answers each item's
        requests of a pass in a call of its own, all calls at once; engine
        work runs in a worker thread. ``batch_key`` as for ``deposit_many``."""
        key = None if batch_key is None else check_batch_key(batch_key)
        rnd, per_item = check_round(round), _check_per_item(judge_per_item)
        batch = await asyncio.to_thread(self._batch, items, rnd, scope)
        if not batch:
            return []
        bk = None if key is None else (key, batch_digest(batch))
        return await self._arun(batch, judge, per_item, batch=bk)

    async def adeposit(
        self,
        owner: str,
        statements: Sequence[str],
        vectors: Any = None,
        *,
        round: int = 0,
        judge: Optional[JudgeFn] = None,
        metadata: Any = None,
        scope: Optional[str] = None,
    ) -> Deposit:
        """``deposit`` for asyncio: the judge may be a coroutine function, and
        engine work runs in a worker thread so the event loop stays free."""
        item = await asyncio.to_thread(self._item, owner, statements, vectors, check_round(round), scope)
        item.metadata = metadata_per_statement(metadata, len(item.statements))
        return (await self._arun([item], judge))[0]

    # -- reads -----------------------------------------------------------------

    def recall(
        self,
        owner: str,
        query: Any,
        *,
        k: int = 5,
        expand: bool = True,
        where: Optional[dict[str, Any]] = None,
        threshold: Optional[float] = None,
        lexical: bool = False,
        scope: Optional[str] = None,
        as_of: Optional[int] = None,
    ) -> list[Memory]:
        """The ``k`` records ``owner`` owns that are most similar to ``query``
        (a vector, or a str when the store has ``embed``), then, with
        ``expand``, the records one affiliation edge away from them that
        ``owner`` also owns. Never returns a record ``owner`` does not own.

        ``where`` keeps hits and expansion rows to records that pass it (on
        ``owner``'s metadata, ``round``, ``created_at``, ``updated_at``:
        equality, ``$in``, ``$gte``/``$lte``/``$gt``/``$lt``; see
        docs/reference/store.md, "Metadata and filters"): the engine filters inside its
        candidate scan, so the hits are the k best that pass. ``threshold``
        drops hits scoring below it (and what only they would expand to).

        ``lexical=True`` (``query`` a str) ranks the owner's records both by
        vector and by the lexical index and fuses the two rankings
        (reciprocal rank fusion); each row carries the fields vector recall
        gives it (metadata, times) and each hit its ``lexical_score``. It
        takes no ``where`` or ``threshold``.

        ``scope`` keeps the hits to ``owner``'s records of that scope (an
        exact scan of them); ``None`` recalls from every scope ``owner``
        deposited in.

        Under ``Store(disclosure="own_words")`` each row holds ``owner``'s
        own statement and ``owner`` alone, ranked by its own statements'
        vectors, without the affiliation hop (docs/reference/store.md, "What an owner reads").

        Only records current for ``owner`` come back: a record is left out
        once ``owner`` holds a later record of its chain of versions (a
        judge's `Supersedes`). ``as_of=R`` recalls what ``owner`` held at
        round R instead: the records it held by then (its first statement
        in each at or before R) that no record it held by then superseded.
        Each shows its text as it is now. ``as_of`` takes no ``lexical``."""
        # Everything here holds the GIL, which reader threads take in turn:
        # the common call (a float32 vector, an int k, no where, threshold
        # or scope) is checked with the fewest Python steps.
        engine = self._handles().engine
        owner = check_owner(owner, existing=True)
        if type(k) is not int or k < 1:
            k = check_k(k)
        sc = None if scope is None else check_scope(scope)
        if lexical and sc is not None:
            raise ValueError("recall takes no scope with lexical=True")
        if lexical and as_of is not None:
            raise ValueError("recall takes no as_of with lexical=True")
        if self.disclosure == "own_words":
            floor_or_none = None if threshold is None else _check_threshold(threshold)
            return own_recall(self, owner, query, k, where, floor_or_none, sc, bool(lexical), as_of)
        if lexical:
            return fused_recall(self, engine, owner, query, k, bool(expand), where, threshold)
        if isinstance(query, str):
            if self.embed is None:
                raise TypeError("query is a str, but " + no_embed_message(self.embedder_name, "pass a vector"))
            query = self.embed([query])
        spec = b"" if where is None else encode_where(where)
        if as_of is not None:
            spec = with_as_of(spec, as_of)
        floor = _NO_FLOOR if threshold is None else _check_threshold(threshold)
        if (
            type(query) is np.ndarray
            and query.dtype == _F32
            and query.shape == (self.dim,)
            and query.flags.c_contiguous
        ):
            # The engine refuses a NaN, inf or zero-norm query before it
            # reads anything; the full check then gives its message.
            q = query
        else:
            q = check_query(query, self.dim, self.metric)
        try:
            # The engine builds the Memory objects itself, in C++.
            out: list[Memory] = engine.recall_memories(
                owner, sc, q, k, bool(expand), spec, floor, Memory, decode_metadata
            )
        except ValueError:
            check_query(q, self.dim, self.metric)
            raise
        return out

    def recall_many(
        self,
        queries: Sequence[tuple[str, Any]],
        *,
        k: int = 5,
        expand: bool = True,
        where: Optional[dict[str, Any]] = None,
        threshold: Optional[float] = None,
        lexical: bool = False,
        scope: Optional[str] = None,
        as_of: Optional[int] = None,
    ) -> list[list[Memory]]:
        """One list of memories per ``(owner, query)`` pair of ``queries``, in
        their order: each what `recall` gives for that owner and query
        with the same options (``k``, ``expand``, ``where``, ``threshold``,
        ``scope``, ``as_of``). ``[]`` for no pairs.

        The engine runs the recalls across a few threads with the GIL
        released, on one read snapshot: all answers describe one state of the
        store, even while other threads or processes write. A query is a
        vector or a str (str queries are embedded in one call of the store's
        embedder). Every pair is checked before any recall runs; a bad one
        raises with its index (``queries[3] owner ...``).

        ``lexical=True`` and ``Store(disclosure="own_words")`` are served by
        calling `recall` once per pair: the same answers, without the
        threads or the single snapshot."""
        return recall_many(self, queries, k, expand, where, threshold, lexical, scope, as_of)

    def get(self, id: int, owner: Optional[str] = None) -> Memory:
        """The record ``id``; ``KeyError`` when absent. With ``owner``, the
        memory carries that owner's metadata of it; under
        ``disclosure="own_words"`` it is ``owner``'s view of a record it owns
        (its earliest statement in it, itself alone as owner; ``KeyError``
        otherwise), as docs/reference/store.md, "What an owner reads" says."""
        who = "" if owner is None else check_owner(owner, existing=True)
        if who and self.disclosure == "own_words":
            return own_get(self, _check_id(id), who)
        engine = self._handles().engine
        i, t, o, r, c, u, m = engine.get_meta(_check_id(id), who)
        older, newer, until = links_of(engine, i)
        return Memory(
            i, t, frozenset(o), r, None, "", decode_metadata(m), to_datetime(c), to_datetime(u),
            supersedes=older, superseded_by=newer, valid_until=until,
        )  # fmt: skip

    def neighbors(self, id: int) -> list[int]:
        """Record ids one affiliation edge from ``id``, ascending."""
        return list(self._handles().engine.neighbors(_check_id(id)))

    def owned(self, owner: str) -> list[int]:
        """Record ids ``owner`` owns, ascending."""
        return list(self._handles().engine.owned(check_owner(owner, existing=True)))

    def forget(self, owner: str, id: int) -> None:
        """``owner`` leaves the record's owner set; a record left with no owner
        is deleted, with its edges and merge-log entries. When other owners
        remain, ``owner``'s statements leave the merge log, and a text (or
        vector) that is ``owner``'s becomes another owner's statement, as
        the merge policy chooses (``compact`` then takes the words off the
        disk). ``KeyError`` when the record is absent or ``owner`` does not
        own it."""
        engine = self._writable()
        owner, rid = check_owner(owner, existing=True), _check_id(id)
        for _ in range(_MAX_ATTEMPTS):
            text, rows = engine.said(rid)
            plan = plan_forget(owner, text, rows, self._policy, engine.scope_of(rid))
            if engine.forget(owner, rid, *plan):
                return
        raise ContentionError(
            f"forget gave up after {_MAX_ATTEMPTS} attempts: concurrent commits kept changing record {rid}"
        )

    def update(
        self,
        id: int,
        text: str,
        *,
        owner: str,
        vector: Any = None,
        round: int = 0,
        metadata: Optional[dict[str, Any]] = None,
    ) -> int:
        """``owner`` rewrites its record ``id`` to ``text`` (embedded with
        ``embed`` unless ``vector`` is given); returns the id that holds it.
        A record only ``owner`` owns is rewritten in place, in one commit:
        same id, new text and vector, the old text in the merge log (see
        ``history``), ``updated_at`` moved, ``metadata`` (when given)
        replacing ``owner``'s. A record others own too keeps their words:
        ``text`` is deposited as ``owner``'s (it may merge elsewhere), then
        ``owner`` forgets the old record; a crash between the two leaves
        ``owner`` with both, never neither. ``KeyError`` when ``owner`` does
        not own ``id``."""
        from ._store.record_meta import check_metadata

        engine = self._writable()
        owner, rid = check_owner(owner, existing=True), _check_id(id)
        # The new text stays in the record's scope (its digest is keyed by it).
        item = self._item(owner, [text], None if vector is None else [vector], check_round(round), engine.scope_of(rid))
        meta = "" if metadata is None else check_metadata(metadata)
        for _ in range(_MAX_ATTEMPTS):
            current = self.get(rid)
            if owner not in current.owners:
                raise KeyError(f"record {rid} is not owned by {owner!r}")
            if len(current.owners) > 1:
                got = self.deposit(owner, [text], item.vectors, round=item.round, metadata=metadata, scope=item.scope)
                if got.ids[0] != rid:
                    self.forget(owner, rid)
                return got.ids[0]
            kept = engine.prepare_vectors(item.vectors)[0]
            try:
                if engine.update(owner, rid, current.text, item.statements[0], item.digests[0], kept, item.round, meta):
                    return rid
            except ValueError as e:
                if "other owners" not in str(e):
                    raise  # another owner joined since get: go round again
        raise ContentionError(
            f"update gave up after {_MAX_ATTEMPTS} attempts: concurrent commits kept changing record {rid}"
        )

    def history(self, id: int) -> list[Change]:
        """Record ``id``'s changes, oldest first (see `Change`): how it
        was made, each text change, each statement merged in, then its
        place in its chain of versions (``SUPERSEDES``: the record it
        superseded; ``SUPERSEDED``: the record that superseded it). Read
        from the said rows, the merge log and the versions; ``KeyError``
        when absent."""
        engine = self._handles().engine
        rid = _check_id(id)
        return history_of(engine, rid) + supersession_events(engine, rid)

    def chain(self, id: int) -> list[Memory]:
        """The chain of versions record ``id`` belongs to, oldest first
        (``[get(id)]`` when nothing superseded it and it superseded
        nothing): each record superseded by the next. ``KeyError`` when
        absent."""
        return [self.get(rid) for rid in self._handles().engine.chain(_check_id(id))]

    def delete_all(self, owner: str, *, progress: Optional[Callable[[int, int], None]] = None) -> int:
        """``owner`` forgets every record it owns (``forget``, one commit
        each); returns how many. Records others own stay, without
        ``owner``'s words. ``progress(done, total)`` is called after each."""
        self._writable()
        owner = check_owner(owner, existing=True)
        ids = self.owned(owner)
        for n, rid in enumerate(ids, 1):
            self.forget(owner, rid)
            if progress is not None:
                progress(n, len(ids))
        return len(ids)

    def reset(self, *, progress: Optional[Callable[[int, int], None]] = None) -> int:
        """Every owner forgets everything: the store is left with no
        records (its identity, dim, metric and Planfence lineage stay);
        returns how many records there were. One commit per (owner, record);
        ``progress(records gone, records at the start)`` after each owner."""
        self._writable()
        n = self.stats().records
        for owner in list(self._handles().engine.owner_names()):
            if self.owned(owner):
                self.delete_all(owner)
                if progress is not None:
                    progress(n - self.stats().records, n)
        return n

    def stats(self, scope: Optional[str] = None) -> Stats:
        """Store-wide counts (see `Stats`); with ``scope``, the counts of
        that scope's live records only (``deposits``: the deposits that created
        them), so a scope's stats show nothing of another scope."""
        return Stats(**self._handles().engine.stats(None if scope is None else check_scope(scope)))

    def records(self) -> Iterator[Memory]:
        """Every record, in id order (a consistent snapshot per page of 1024)."""
        after = 0
        while True:
            engine = self._handles().engine
            page = engine.records_meta(after, 1024)
            links = engine.versions_of([row[0] for row in page]) if page else []
            for (i, t, o, r, c, u), (older, newer, until) in zip(page, links):
                yield Memory(
                    i, t, frozenset(o), r, None, "", None, to_datetime(c), to_datetime(u),
                    supersedes=older, superseded_by=newer, valid_until=until,
                )  # fmt: skip
                after = i
            if len(page) < 1024:
                return

    def verify(self) -> list[str]:
        """Every broken invariant, in plain words; ``[]`` when the store is
        sound. Checks owner sets against owner lists, edge symmetry, the
        counters behind ``stats``, the text and merge indexes, the journal,
        and that the index holds exactly the records' vectors; then the
        Planfence lineage (see `Fence.verify`). Every record's text
        digests are recomputed from its texts: a digest of another text is
        reported. One snapshot throughout: a writer in another process is
        never reported as damage."""
        engine, lineage = self._handles()
        # I19 recomputes each record's text digests with the store's own
        # normalization, which lives here, not in the engine.
        return list(engine.verify(text_digest)) + list(lineage.verify())

    def repair(self) -> None:
        """Rebuilds the index and every derived table from the records, owner
        sets, edges and merge log, dropping records that cannot be served (no
        vector or no owner). Needs exclusive use of the store: while another
        process has it open, `Error` says so and nothing changes."""
        engine = self._writable()
        texts: list[tuple[int, str]] = [(m.id, m.text) for m in self.records()]
        for rid, _ in list(texts):  # the statements forget may have left in said rows only
            texts += [(rid, said[3]) for said in engine.said(rid)[1]]
        for m in self.merges():
            texts += [(m.survivor, m.kept), (m.survivor, m.discarded)]
        # Each digest is keyed by its record's scope, as the deposit that wrote it.
        ids = sorted({rid for rid, _ in texts})
        try:
            scope_of = dict(zip(ids, engine.scopes_of(ids)))
        except CorruptStoreError:  # a damaged scope row: that record is dropped, its digests do not matter
            scope_of = {rid: _scope_or_default(engine, rid) for rid in ids}
        engine.repair([(rid, text_digest(t, scope_of[rid])) for rid, t in texts])

    def scope_of(self, id: int) -> str:
        """The scope of record ``id`` (``""``: the default scope), given by
        the deposit that created it; ``KeyError`` when absent."""
        return str(self._handles().engine.scope_of(_check_id(id)))

    def scopes(self) -> list[str]:
        """Every scope a deposit named, in the order the store met them (the
        default scope ``""`` is not listed)."""
        return list(self._handles().engine.scope_names())

    def merges(self) -> Iterator[Merge]:
        """The merge log, oldest first."""
        after = 0
        while True:
            page = self._handles().engine.merges(after, 1024)
            for seq, survivor, kept, discarded, owner, rnd in page:
                yield Merge(survivor, kept, discarded, owner, rnd)
                after = seq
            if len(page) < 1024:
                return


def _check_per_item(judge_per_item: Any) -> bool:
    if not isinstance(judge_per_item, bool):
        raise TypeError(f"judge_per_item must be a bool, got {type(judge_per_item).__name__}")
    return judge_per_item


_F32 = np.dtype(np.float32)
_NO_FLOOR = float("-inf")


def _check_threshold(threshold: Any) -> float:
    if threshold is None:
        return float("-inf")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating, np.integer)):
        raise TypeError(f"threshold must be a number, got {type(threshold).__name__}")
    if threshold != threshold:
        raise ValueError("threshold must not be NaN")
    return float(threshold)


def _scope_or_default(engine: Any, rid: int) -> str:
    try:
        return str(engine.scope_of(rid))
    except CorruptStoreError:
        return DEFAULT_SCOPE


def _check_id(id: Any) -> int:
    if isinstance(id, bool) or not isinstance(id, (int, np.integer)):
        raise TypeError(f"id must be an int, got {type(id).__name__}")
    if int(id) < 0:
        raise KeyError(f"no record {int(id)}")
    return int(id)
