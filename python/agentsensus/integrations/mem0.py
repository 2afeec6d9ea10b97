"""A mem0-style API over a consensus store: ``Memory(path=PATH, embedder="hash")``
and ``AsyncMemory``, shaped as mem0 2.x's open-source ``Memory``/``AsyncMemory``.

It serves code written for mem0 with a changed import: ``add``, ``search``,
``get_all``, ``get``, ``update``, ``delete``, ``delete_all``, ``history`` and
``reset`` take mem0 2.x's arguments (``filters=``, ``top_k=``, ``threshold=``,
``update(id, text=..., metadata=...)``) and return its shapes.

How mem0's scopes map onto the store (docs/integrations.md, "mem0"):

- the owner of a memory is ``"user:<user_id>"`` when ``user_id`` is given,
  else ``"agent:<agent_id>"``, else ``"run:<run_id>"``; the three ids, the
  message's ``role`` and ``name`` (mem0's ``actor_id``) and the owner's own
  add and update times go into the owner's metadata of the record;
- two owners who add the same words share one record (the store's
  consensus), and each holds its own memory of it: a memory id names
  (record, owner) (agentsensus.integrations.mem0_ids), ``delete`` is that
  owner's ``Store.forget`` (the others keep theirs), ``add`` answers ``ADD``
  to an owner who did not hold the record before, whoever else did;
- ``get``, ``update``, ``delete`` and ``history`` act on the memory the id
  names; given ``user_id``/``agent_id``/``run_id`` too, an id of any other
  owner's memory is unknown to them, exactly as an id never handed out.

Without an ``extractor``, ``infer=True`` (mem0's default) adds each message as
it is, as ``infer=False`` does: there is no model to extract facts with.

``Memory(path, disclosure="own_words")`` (or ``"disclosure"`` in the config)
opens the store so that every read shows an owner only its own words: a
memory's text is what that owner said, never another owner's wording of the
same fact (docs/reference/store.md, "What an owner reads"), and ``history`` shows only the
owner's own texts. ``"shared"`` (the default) shows the record's text,
which a merge may have taken from another owner.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import hashlib
import logging
import secrets
import uuid
from typing import Any, Callable, Concatenate, Coroutine, Mapping, Optional, ParamSpec, Sequence, TypeVar, Union

import numpy as np

from .. import embedders
from ..records import Memory as _Row
from ..store import Store
from .mem0_filters import compile_filters
from .mem0_ids import IdCodec, load_key

__all__ = ["Memory", "AsyncMemory"]

Extractor = Callable[[list[dict[str, str]]], Sequence[str]]
MemoryId = Union[str, uuid.UUID]

log = logging.getLogger(__name__)

_IDS = ("user_id", "agent_id", "run_id")
_IDENTITY = frozenset(_IDS + ("actor_id",))
# mem0 lifts these payload keys to the item's top level (mem0/memory/main.py).
_PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to", "expiration_date")
_HIDDEN = "_mem0_"  # prefix of the adapter's own keys in an owner's metadata
_ALIAS, _CREATED, _UPDATED = _HIDDEN + "id", _HIDDEN + "created_at", _HIDDEN + "updated_at"
_CONFIG_KEYS = {"path", "embedder", "vector_store", "extractor", "version", "disclosure"}
_MAX_RID = 2**63 - 1
_T = TypeVar("_T")
_P = ParamSpec("_P")


def _embedder(spec: Any) -> Any:
    if callable(spec):
        return spec
    if isinstance(spec, Mapping):  # mem0's {"provider": ..., "config": {...}}
        provider = spec.get("provider")
        config = dict(spec.get("config") or {})
        if provider == "hash":
            dims = config.get("embedding_dims", config.get("dim", 384))
            if isinstance(dims, bool) or not isinstance(dims, int):
                raise ValueError(f"embedder 'hash' takes an int embedding_dims, got {dims!r}")
            return embedders.HashEmbedder(dims)
        if provider in ("huggingface", "sentence_transformers"):
            model = config.get("model")
            if not isinstance(model, str):
                raise ValueError(f"embedder {provider!r} needs config.model, the model name")
            return embedders.SentenceTransformerEmbedder(model)
        raise ValueError(f"embedder provider {provider!r} is not supported: use 'hash' or 'huggingface'")
    if spec == "hash":
        return embedders.hash
    if isinstance(spec, str) and spec.startswith("sentence_transformers:"):
        return embedders.SentenceTransformerEmbedder(spec.split(":", 1)[1])
    raise ValueError(
        f"embedder must be 'hash', 'sentence_transformers:NAME', a mem0 config or a callable, got {spec!r}"
    )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _iso(t: Optional[datetime.datetime]) -> Optional[str]:
    return None if t is None else t.isoformat()


def _entity(value: Any, name: str) -> Optional[str]:
    """mem0's id check: ``None``, or a str (ints coerced) with no whitespace."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{name} must be one id (a str), got {value!r}")
    text = str(value).strip()
    if not text:
        raise ValueError(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.")
    if any(c.isspace() for c in text):
        raise ValueError(f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces.")
    return text


def _messages(messages: Any) -> list[dict[str, Any]]:
    """mem0's accepted inputs: a str, one message dict, or a list of them."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, (list, tuple)):
        raise ValueError("messages must be str, dict, or list[dict]")
    out = []
    for n, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str) or not isinstance(m.get("role"), str):
            raise ValueError(f"messages[{n}] must be a dict with a str 'role' and a str 'content'")
        name = m.get("name")
        out.append({"role": m["role"], "content": m["content"], "name": name if isinstance(name, str) else None})
    return out


def _user_metadata(metadata: Any, what: str) -> dict[str, Any]:
    """The caller's metadata without the identity keys (mem0 drops them too:
    a memory's scope comes from its ids, never from its metadata)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    out = {}
    for key, value in metadata.items():
        if isinstance(key, str) and key.startswith(_HIDDEN):
            raise ValueError(f"metadata keys starting with {_HIDDEN!r} are the adapter's own, got {key!r}")
        if key in _IDENTITY:
            log.warning("%s: ignoring metadata[%r] - identity fields cannot be set through metadata", what, key)
            continue
        out[key] = value
    return out


def _check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        raise ValueError("top_k must be a valid integer")
    if top_k < 0:
        raise ValueError(f"Invalid top_k: {top_k}. Must be a non-negative integer.")
    return top_k


class Memory:
    """mem0's ``Memory`` over the store at ``path`` (made with the embedder's
    dim when new). ``extractor`` (``messages -> list of facts``) serves
    ``add(..., infer=True)``; without one every message is added as it is.
    Other keyword arguments go to `agentsensus.Store`, among them
    ``disclosure`` (``"shared"`` or ``"own_words"``; see the module's docstring)."""

    def __init__(
        self,
        path: str,
        embedder: Any = "hash",
        *,
        extractor: Optional[Extractor] = None,
        **store_options: Any,
    ) -> None:
        embed = _embedder(embedder)
        if extractor is not None and not callable(extractor):
            raise TypeError("extractor must be a callable messages -> list of facts")
        self.extractor = extractor
        self.store = Store(path, embed=embed, **store_options)
        try:
            self._ids = IdCodec(load_key(self.store.path))
        except BaseException:
            self.store.close()
            raise
        self._tag_owners: dict[bytes, str] = {}  # owner tag -> owner, for ids whose record moved
        self._tagged: tuple[str, ...] = ()  # the owner names _tag_owners was built from

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "Memory":
        """From a mem0-shaped config: ``path`` (or ``vector_store.config.path``),
        ``embedder`` (a name, or ``{"provider": ..., "config": {...}}``),
        ``extractor`` and ``disclosure``. Other keys (mem0's ``llm``, ``graph_store``, ...) have
        no counterpart here and are refused, so nothing is silently ignored."""
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        unknown = sorted(set(config) - _CONFIG_KEYS)
        if unknown:
            raise ValueError(f"config keys {unknown} are not supported; the keys are {sorted(_CONFIG_KEYS)}")
        path = config.get("path")
        vs = config.get("vector_store")
        if path is None and isinstance(vs, Mapping):
            path = (vs.get("config") or {}).get("path")
        if not isinstance(path, str):
            raise ValueError("config needs 'path' (or vector_store.config.path): the store's directory")
        options = {"disclosure": config["disclosure"]} if "disclosure" in config else {}
        return cls(path, config.get("embedder", "hash"), extractor=config.get("extractor"), **options)

    def close(self) -> None:
        """Closes the store (saves its index); the memory is unusable afterwards."""
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scopes and ids ----------------------------------------------------------

    @staticmethod
    def _scope(
        user_id: Any, agent_id: Any, run_id: Any, filters: Optional[Mapping[str, Any]] = None, *, need: bool = True
    ) -> tuple[Optional[str], dict[str, str], dict[str, Any]]:
        """(owner, the ids, the other filters) of a call: ids given as
        arguments (mem0 1.x, and 2.x's ``add``) or in ``filters`` (2.x)."""
        if filters is not None and not isinstance(filters, Mapping):
            raise TypeError(f"filters must be a dict, got {type(filters).__name__}")
        rest = dict(filters or {})
        ids: dict[str, str] = {}
        for name, arg in zip(_IDS, (user_id, agent_id, run_id)):
            given = _entity(arg, name)
            if name in rest:
                raw = rest[name]
                if isinstance(raw, (Mapping, list)) or (isinstance(raw, str) and raw.strip() == "*"):
                    # A condition on an id beside the owner's is a filter like any other.
                    if not ids and given is None:
                        raise ValueError(
                            f"filters: {name} must be one id (a str): each {name[:-3]}'s memories are apart"
                        )
                else:
                    in_filters = _entity(rest.pop(name), name)
                    if given is not None and in_filters != given:
                        raise ValueError(f"{name} is {given!r} as an argument but {in_filters!r} in filters")
                    given = in_filters
            if given is not None:
                ids[name] = given
        owner = next((f"{n[:-3]}:{ids[n]}" for n in _IDS if n in ids), None)
        if owner is None and need:
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")
        return owner, ids, rest

    def _id(self, rid: int, owner: str, meta: Mapping[str, Any]) -> str:
        alias = meta.get(_ALIAS)
        return alias if isinstance(alias, str) else self._ids.encode(rid, owner)

    def _owner_of_tag(self, tag: bytes) -> Optional[str]:
        owner = self._tag_owners.get(tag)
        if owner is None:
            names = tuple(self.store._handles().engine.owner_names())
            if names != self._tagged:
                self._tag_owners = {self._ids.owner_tag(o): o for o in names}
                self._tagged = names
                owner = self._tag_owners.get(tag)
        return owner

    def _find(self, memory_id: Any, acting: Optional[str] = None) -> Optional[tuple[int, str, _Row]]:
        """(record, owner, the owner's view of it) of ``memory_id``, or ``None``
        when the id names no memory (or one of an owner other than ``acting``)."""
        opened = self._ids.decode(str(memory_id) if isinstance(memory_id, uuid.UUID) else memory_id)
        if opened is None:
            return None
        rid, tag = opened
        if rid <= _MAX_RID:
            try:
                owners = self.store.get(rid).owners
            except KeyError:
                owners = frozenset()
            canonical = str(uuid.UUID(str(memory_id)))
            for owner in owners:
                if self._ids.owner_tag(owner) == tag and (acting is None or owner == acting):
                    m = self.store.get(rid, owner=owner)
                    alias = (m.metadata or {}).get(_ALIAS)
                    if alias is None or alias == canonical:  # else the id is of a memory that moved
                        return rid, owner, m
        # An update of a shared memory moved it to another record; it kept its id there.
        moved = self._owner_of_tag(tag)
        if moved is None or (acting is not None and moved != acting):
            return None
        at = self._aliased(moved, str(uuid.UUID(str(memory_id))))
        return None if at is None else (at, moved, self.store.get(at, owner=moved))

    def _aliased(self, owner: str, memory_id: str) -> Optional[int]:
        """The record of ``owner``'s memory that kept ``memory_id`` when an
        update moved it (an exact scan of the owner's records, in the engine)."""
        probe = np.full(self.store.dim, 1.0 / np.sqrt(self.store.dim), dtype=np.float32)
        hits = self.store.recall(owner, probe, k=1, expand=False, where={_ALIAS: memory_id})
        return hits[0].id if hits else None

    def _moved(self, owner: str, held: int) -> dict[int, str]:
        """The owner's memories that an update moved (record -> the id they
        kept), found by one scan of its records in the engine."""
        if not held:
            return {}
        probe = np.full(self.store.dim, 1.0 / np.sqrt(self.store.dim), dtype=np.float32)
        hits = self.store.recall(owner, probe, k=held, expand=False, where={_ALIAS: {"$gte": ""}})
        aliases = {m.id: (m.metadata or {}).get(_ALIAS) for m in hits}
        return {rid: a for rid, a in aliases.items() if isinstance(a, str) and a != self._ids.encode(rid, owner)}

    def _rejoined(self, rid: int, owner: str, text: str, meta: dict[str, Any]) -> int:
        """``owner``'s words merged into record ``rid`` that it left by an update,
        whose moved memory kept the id (rid, owner) names: the new memory
        gets an id of its own (of no record: found as a moved one is). Returns
        the record that holds the new memory."""
        natural = self._ids.encode(rid, owner)
        if self._aliased(owner, natural) in (None, rid):
            return rid
        fresh = self._ids.encode((1 << 62) | secrets.randbits(62), owner)
        return self.store.update(rid, text, owner=owner, metadata={**meta, _ALIAS: fresh})

    def _acting(self, user_id: Any, agent_id: Any, run_id: Any) -> Optional[str]:
        return self._scope(user_id, agent_id, run_id, need=False)[0]

    @staticmethod
    def _fields(m: _Row) -> dict[str, Any]:
        """What mem0's filters see of a memory: its payload's fields."""
        meta = m.metadata or {}
        fields = {k: v for k, v in meta.items() if not k.startswith(_HIDDEN)}
        fields["created_at"] = meta.get(_CREATED) or _iso(m.created_at)
        fields["updated_at"] = meta.get(_UPDATED) or _iso(m.updated_at)
        return fields

    def _item(self, m: _Row, owner: str, *, score: Any = None, with_score: bool = True) -> dict[str, Any]:
        meta = m.metadata or {}
        item: dict[str, Any] = {
            "id": self._id(m.id, owner, meta),
            "memory": m.text,
            "hash": hashlib.md5(m.text.encode("utf-8")).hexdigest(),
            "metadata": None,
            "score": score,
            "created_at": meta.get(_CREATED) or _iso(m.created_at),
            "updated_at": meta.get(_UPDATED) or _iso(m.updated_at),
        }
        if not with_score:
            del item["score"]
        for key in _PROMOTED:
            if key in meta:
                item[key] = meta[key]
        extra = {k: v for k, v in meta.items() if k not in _PROMOTED and not k.startswith(_HIDDEN)}
        if extra:
            item["metadata"] = extra
        return item

    # -- writes ------------------------------------------------------------------

    def add(
        self,
        /,
        messages: Any,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        infer: bool = True,
        **unsupported: Any,
    ) -> dict[str, Any]:
        """Each non-system message's content (mem0's ``infer=False``; also
        ``infer=True`` without an extractor) or each fact the extractor finds
        becomes a memory of the scope's owner, in one deposit. Each result's
        ``event`` is ``ADD``, or ``UPDATE`` when the words ended in a memory
        this owner already held."""
        if unsupported:
            raise ValueError(f"add() arguments {sorted(unsupported)} are not supported here")
        owner, ids, _ = self._scope(user_id, agent_id, run_id)
        assert owner is not None
        base = {**_user_metadata(metadata, "add()"), **ids}
        msgs = _messages(messages)
        now = _now()
        base[_CREATED] = base[_UPDATED] = now
        extracted = bool(infer) and self.extractor is not None
        items: list[tuple[str, dict[str, Any], Optional[dict[str, Any]]]] = []
        if extracted:
            assert self.extractor is not None
            facts = [f for f in self.extractor([{"role": m["role"], "content": m["content"]} for m in msgs])]
            items = [(f, dict(base), None) for f in facts if isinstance(f, str)]
        else:
            for m in msgs:
                if m["role"] == "system":
                    continue
                meta = {**base, "role": m["role"]}
                if m["name"]:
                    meta["actor_id"] = m["name"]
                items.append((m["content"], meta, m))
        items = [it for it in items if it[0].strip()]
        if not items:
            return {"results": []}
        held = set(self.store.owned(owner))
        moved = self._moved(owner, len(held))
        got = self.store.deposit(owner, [t for t, _, _ in items], metadata=[md for _, md, _ in items])
        results = []
        for rid, merged, (text, meta, msg) in zip(got.ids, got.merged, items):
            if merged and rid not in held:
                rid = self._rejoined(rid, owner, text, meta)
            elif rid in moved:  # the deposit replaced this owner's metadata: the id goes back in
                rid = self.store.update(rid, text, owner=owner, metadata={**meta, _ALIAS: moved.pop(rid)})
            row: dict[str, Any] = {
                "id": self._id(rid, owner, self.store.get(rid, owner=owner).metadata or {}),
                "memory": text,  # the owner's own words: the record may read as another owner's
                "event": "UPDATE" if rid in held else "ADD",
            }
            if msg is not None:
                row["actor_id"] = msg["name"]
                row["role"] = msg["role"]
            held.add(rid)
            results.append(row)
        return {"results": results}

    def update(
        self,
        memory_id: MemoryId,
        text: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        *,
        data: Optional[str] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> dict[str, str]:
        """The memory's text becomes ``text`` (``data``: mem0's older name for
        it) and ``metadata`` is merged into its metadata; same id. A memory
        other owners share keeps their words: this owner's moves to the new
        text (it may merge elsewhere), under the same id."""
        if text is None:
            text = data
        if text is None and metadata is None:
            raise ValueError("At least one of text, metadata, or expiration_date must be provided.")
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise ValueError("text must be a non-empty str")
        extra = _user_metadata(metadata, "update()")
        found = self._find(memory_id, self._acting(user_id, agent_id, run_id))
        if found is None:
            raise ValueError(f"Memory with id {memory_id} not found. Please provide a valid 'memory_id'")
        rid, owner, m = found
        meta = {**(m.metadata or {}), **extra}
        meta[_ALIAS] = self._id(rid, owner, m.metadata or {})  # the id stays if the words move
        meta[_UPDATED] = _now()
        meta.setdefault(_CREATED, _iso(m.created_at) or meta[_UPDATED])
        self.store.update(rid, m.text if text is None else text, owner=owner, metadata=meta)
        return {"message": "Memory updated successfully!"}

    def delete(
        self,
        memory_id: MemoryId,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> dict[str, str]:
        """This owner forgets the memory (``Store.forget``); other owners of
        the same words keep theirs."""
        found = self._find(memory_id, self._acting(user_id, agent_id, run_id))
        if found is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        rid, owner, _ = found
        self.store.forget(owner, rid)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        *,
        filters: Optional[dict[str, Any]] = None,
    ) -> dict[str, str]:
        """The scope's owner forgets the scope's memories (those that pass
        ``filters`` too)."""
        owner, ids, rest = self._scope(user_id, agent_id, run_id, filters, need=False)
        if owner is None:
            raise ValueError(
                "At least one filter is required to delete all memories. "
                "If you want to delete all memories, use the `reset()` method."
            )
        for m in self._listed(owner, ids, rest):
            self.store.forget(owner, m.id)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Every memory of the store goes (every owner forgets everything)."""
        self.store.reset()

    # -- reads -------------------------------------------------------------------

    def _listed(
        self, owner: str, ids: Mapping[str, str], rest: Mapping[str, Any], limit: Optional[int] = None
    ) -> list[_Row]:
        """The owner's memories of scope ``ids`` that pass ``rest``, oldest
        first, the first ``limit`` of them (all: ``None``)."""
        test = compile_filters({**rest, **ids}).test
        out: list[_Row] = []
        for rid in self.store.owned(owner):
            if limit is not None and len(out) >= limit:
                break
            m = self.store.get(rid, owner=owner)
            if test(self._fields(m)):
                out.append(m)
        return out

    def get(
        self,
        memory_id: MemoryId,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> Optional[dict[str, Any]]:
        """The memory, or ``None`` when no memory has that id (given
        ``user_id``/``agent_id``/``run_id``: no memory of that owner)."""
        found = self._find(memory_id, self._acting(user_id, agent_id, run_id))
        if found is None:
            return None
        _, owner, m = found
        return self._item(m, owner)

    def get_all(
        self,
        *,
        filters: Optional[dict[str, Any]] = None,
        top_k: Optional[int] = None,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> dict[str, Any]:
        """The scope's memories that pass ``filters``, oldest first, at most
        ``top_k`` (20 by default; ``limit`` is mem0 1.x's name)."""
        owner, ids, rest = self._scope(user_id, agent_id, run_id, filters, need=False)
        if owner is None:
            raise ValueError(
                "filters must contain at least one of: user_id, agent_id, run_id. Example: filters={'user_id': 'u1'}"
            )
        k = _check_top_k(20 if top_k is None and limit is None else top_k if top_k is not None else limit)
        rows = self._listed(owner, ids, rest, k)
        return {"results": [self._item(m, owner, with_score=False) for m in rows]}

    def search(
        self,
        query: str,
        *,
        top_k: Optional[int] = None,
        filters: Optional[dict[str, Any]] = None,
        threshold: Optional[float] = 0.1,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: Optional[int] = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """The ``top_k`` (20 by default) memories of the scope most similar to
        ``query`` that pass ``filters``, best first, each with its ``score``
        (the cosine similarity); ``threshold`` (0.1 by default, as mem0's)
        drops scores below it."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("Invalid query: must be a non-empty string.")
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
                raise ValueError("threshold must be a valid number")
            if not 0 <= threshold <= 1:
                raise ValueError(f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive).")
        if rerank:
            raise ValueError("rerank=True is not supported here: there is no reranker")
        k = _check_top_k(20 if top_k is None and limit is None else top_k if top_k is not None else limit)
        owner, ids, rest = self._scope(user_id, agent_id, run_id, filters, need=False)
        if owner is None:
            raise ValueError(
                "filters must contain at least one of: user_id, agent_id, run_id. Example: filters={'user_id': 'u1'}"
            )
        compiled = compile_filters({**rest, **ids})
        if k == 0:
            return {"results": []}
        # A test the engine cannot run: rank every memory that passes its part, then test.
        scan = k if compiled.exact else max(len(self.store.owned(owner)), 1)
        hits = self.store.recall(
            owner, query.strip(), k=scan, expand=False, where=compiled.where or None, threshold=threshold
        )
        hits = [m for m in hits if compiled.test(self._fields(m))][:k]
        return {"results": [self._item(m, owner, score=m.score) for m in hits]}

    def history(
        self,
        memory_id: MemoryId,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
    ) -> list[dict[str, Any]]:
        """The memory's changes by its owner, oldest first, as mem0's rows:
        ``ADD``, then an ``UPDATE`` per change of its text the owner made.
        ``[]`` for an unknown id."""
        found = self._find(memory_id, self._acting(user_id, agent_id, run_id))
        if found is None:
            return []
        rid, owner, m = found
        meta = m.metadata or {}
        mid = self._id(rid, owner, meta)
        changes = self.store.history(rid)
        said = [t for _n, o, _r, t in self.store._handles().engine.said(rid)[1] if o == owner]
        if changes and changes[0].owner == owner:
            first = changes[0].new  # this owner made the record: its first words
        else:
            first = said[0] if said else m.text
        events: list[tuple[str, Optional[str], str]] = [("ADD", None, first)]
        if self.store.disclosure == "own_words":
            # The owner's texts alone: a change's old text may be another owner's
            # words (its merge rewrote theirs), so each UPDATE starts from the last.
            for c in changes[1:]:
                if c.event == "UPDATE" and c.owner == owner and c.new != events[-1][2]:
                    events.append(("UPDATE", events[-1][2], c.new))
        else:
            events += [("UPDATE", c.old, c.new) for c in changes[1:] if c.event == "UPDATE" and c.owner == owner]
        created = meta.get(_CREATED) or _iso(m.created_at)
        return [
            {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{mid}/{n}")),
                "memory_id": mid,
                "old_memory": old,
                "new_memory": new,
                "event": event,
                "created_at": created,
                "updated_at": (meta.get(_UPDATED) if n == len(events) - 1 else None) if event == "UPDATE" else created,
                "is_deleted": False,
                "actor_id": meta.get("actor_id"),
                "role": meta.get("role"),
            }
            for n, (event, old, new) in enumerate(events)
        ]


def _in_thread(
    method: Callable[Concatenate[Memory, _P], _T],
) -> Callable[Concatenate["AsyncMemory", _P], Coroutine[Any, Any, _T]]:
    """``method`` of the async memory's ``Memory``, run in a worker thread."""
    name = method.__name__

    async def call(self: "AsyncMemory", /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        result: _T = await asyncio.to_thread(getattr(self.memory, name), *args, **kwargs)
        return result

    functools.update_wrapper(call, method)  # the name and docstring of Memory's call
    return call


class AsyncMemory:
    """mem0's ``AsyncMemory``: `Memory`'s calls as coroutines (each runs
    the same call in a worker thread), with the same arguments and results."""

    def __init__(
        self, path: str, embedder: Any = "hash", *, extractor: Optional[Extractor] = None, **store_options: Any
    ):
        self.memory = Memory(path, embedder, extractor=extractor, **store_options)
        self.store = self.memory.store

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "AsyncMemory":
        """As `Memory.from_config`."""
        out = cls.__new__(cls)
        out.memory = Memory.from_config(config)
        out.store = out.memory.store
        return out

    def close(self) -> None:
        """Closes the store; the memory is unusable afterwards."""
        self.memory.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    add = _in_thread(Memory.add)
    search = _in_thread(Memory.search)
    get_all = _in_thread(Memory.get_all)
    get = _in_thread(Memory.get)
    update = _in_thread(Memory.update)
    delete = _in_thread(Memory.delete)
    delete_all = _in_thread(Memory.delete_all)
    history = _in_thread(Memory.history)
    reset = _in_thread(Memory.reset)
