"""A mem0-style API over a consensus store: ``Memory(path=PATH, embedder="hash")``.

It serves code written for ``mem0.Memory`` with a changed import. The calls
and the shapes of what they return follow mem0's open-source ``Memory``:
``add``, ``search``, ``get_all``, ``get``, ``update``, ``delete``,
``delete_all``, ``history`` and ``reset``.

How mem0's ids map onto the store (docs/integrations.md, "mem0"):

- the owner of a memory is ``"user:<user_id>"`` when ``user_id`` is given,
  else ``"agent:<agent_id>"``, else ``"run:<run_id>"``; mem0 needs one of them;
- all three ids go into the owner's metadata of the record (``user_id``,
  ``agent_id``, ``run_id``) beside the caller's ``metadata``, so
  ``search(..., user_id=u, agent_id=a)`` searches ``u``'s memories kept to
  agent ``a`` (filtered in the engine: the ``limit`` best that pass);
- a memory id is the record id, as a str. Two owners who add the same words
  share one record (the store's consensus); each sees its own metadata.

Differences: ``infer=True`` calls the ``extractor`` given to ``Memory``
(``messages -> list of facts``, e.g. an LLM through ``agentsensus.llm``)
instead of mem0's built-in prompts, and adds each fact; without an extractor
it is refused. ``history`` reads the store's merge log: an ``ADD``, then
``UPDATE`` per text change and ``MERGE`` per statement merged in; a deleted
memory's words leave the store, so it has no history (mem0 keeps a
``DELETE`` row). ``delete`` removes the record for every owner, as mem0's
delete removes the memory.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from .. import embedders
from ..records import Memory as _Row
from ..store import Store

__all__ = ["Memory"]

Extractor = Callable[[list[dict[str, str]]], Sequence[str]]

_IDS = ("user_id", "agent_id", "run_id")
_CONFIG_KEYS = {"path", "embedder", "vector_store", "extractor", "version"}


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


def _iso(t: Optional[datetime.datetime]) -> Optional[str]:
    return None if t is None else t.isoformat()


def _messages(messages: Any) -> list[dict[str, str]]:
    """mem0's accepted inputs: a str, one message dict, or a list of them."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, (list, tuple)):
        raise ValueError("messages must be a str, a message dict or a list of message dicts")
    out = []
    for n, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{n}] must be a dict with a str 'content'")
        out.append({"role": str(m.get("role", "user")), "content": m["content"]})
    return out


class Memory:
    """mem0's ``Memory`` over the store at ``path`` (made with the
    embedder's dim when new). ``extractor`` serves ``add(..., infer=True)``."""

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

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "Memory":
        """From a mem0-shaped config: ``path`` (or ``vector_store.config.path``),
        ``embedder`` (a name, or ``{"provider": ..., "config": {...}}``) and
        ``extractor``. Other keys (mem0's ``llm``, ``graph_store``, ...) have
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
        return cls(path, config.get("embedder", "hash"), extractor=config.get("extractor"))

    def close(self) -> None:
        """Closes the store (saves its index); the memory is unusable afterwards."""
        self.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ids -------------------------------------------------------------------

    @staticmethod
    def _owner(user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> str:
        for prefix, value in (("user", user_id), ("agent", agent_id), ("run", run_id)):
            if value is not None:
                if not isinstance(value, str) or not value:
                    raise ValueError(f"{prefix}_id must be a non-empty str, got {value!r}")
                return f"{prefix}:{value}"
        raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be provided.")

    @staticmethod
    def _scope(user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> dict[str, str]:
        return {k: v for k, v in zip(_IDS, (user_id, agent_id, run_id)) if v is not None}

    @staticmethod
    def _rid(memory_id: Union[str, int]) -> int:
        try:
            return int(memory_id)
        except (TypeError, ValueError):
            raise ValueError(f"memory_id must be an id this store gave, got {memory_id!r}") from None

    def _item(self, m: _Row, score: Optional[float] = None) -> dict[str, Any]:
        meta = dict(m.metadata or {})
        item: dict[str, Any] = {
            "id": str(m.id),
            "memory": m.text,
            "hash": hashlib.md5(m.text.encode("utf-8")).hexdigest(),
            "metadata": {k: v for k, v in meta.items() if k not in _IDS and k != "role"} or None,
            "created_at": _iso(m.created_at),
            "updated_at": _iso(m.updated_at),
        }
        for key in _IDS + ("role",):
            if key in meta:
                item[key] = meta[key]
        if score is not None:
            item["score"] = score
        return item

    # -- writes ----------------------------------------------------------------

    def add(
        self,
        messages: Any,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        infer: bool = False,
        **unsupported: Any,
    ) -> dict[str, Any]:
        """Each message's content (``infer=False``; system messages are
        skipped, as mem0 does) or each fact the extractor finds
        (``infer=True``) becomes a memory of the scope's owner: one deposit."""
        if unsupported:
            raise ValueError(f"add() arguments {sorted(unsupported)} are not supported here")
        owner = self._owner(user_id, agent_id, run_id)
        if metadata is not None and not isinstance(metadata, Mapping):
            raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
        msgs = _messages(messages)
        base = {**(metadata or {}), **self._scope(user_id, agent_id, run_id)}
        if infer:
            if self.extractor is None:
                raise ValueError("infer=True needs an extractor: Memory(path, extractor=messages -> facts)")
            facts = [f for f in self.extractor(msgs) if isinstance(f, str) and f.strip()]
            items = [(f, base) for f in facts]
        else:
            items = [(m["content"], {**base, "role": m["role"]}) for m in msgs if m["role"] != "system"]
        items = [(t, md) for t, md in items if t.strip()]
        if not items:
            return {"results": []}
        got = self.store.deposit(owner, [t for t, _ in items], metadata=[md for _, md in items])
        return {
            "results": [
                {"id": str(rid), "memory": text, "event": "UPDATE" if merged else "ADD"}
                for rid, merged, (text, _md) in zip(got.ids, got.merged, items)
            ]
        }

    def update(self, memory_id: Union[str, int], data: str) -> dict[str, str]:
        """The memory's text becomes ``data`` (its sole owner's update, same id)."""
        rid = self._rid(memory_id)
        owners = sorted(self.store.get(rid).owners)
        if len(owners) != 1:
            raise ValueError(f"memory {rid} is shared by {len(owners)} owners: update it with Store.update(owner=...)")
        self.store.update(rid, data, owner=owners[0])
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: Union[str, int]) -> dict[str, str]:
        """Removes the memory (every owner forgets it)."""
        rid = self._rid(memory_id)
        for owner in sorted(self.store.get(rid).owners):
            self.store.forget(owner, rid)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, *, user_id: Optional[str] = None, agent_id: Optional[str] = None, run_id: Optional[str] = None
    ) -> dict[str, str]:
        """The scope's owner forgets the memories of the scope."""
        owner = self._owner(user_id, agent_id, run_id)
        for m in self._scoped(owner, user_id, agent_id, run_id):
            self.store.forget(owner, m.id)
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Every memory of the store goes."""
        self.store.reset()

    # -- reads -----------------------------------------------------------------

    def _scoped(self, owner: str, user_id: Optional[str], agent_id: Optional[str], run_id: Optional[str]) -> list[_Row]:
        if owner not in self.store._handles().engine.owner_names():
            return []
        scope = self._scope(user_id, agent_id, run_id)
        out = []
        for rid in self.store.owned(owner):
            m = self.store.get(rid, owner=owner)
            if all((m.metadata or {}).get(k) == v for k, v in scope.items()):
                out.append(m)
        return out

    def get(self, memory_id: Union[str, int]) -> Optional[dict[str, Any]]:
        """The memory, or ``None`` when there is none with that id."""
        rid = self._rid(memory_id)
        try:
            m = self.store.get(rid)
        except KeyError:
            return None
        owner = min(m.owners)  # whose metadata to show: mem0 memories have one scope
        return self._item(self.store.get(rid, owner=owner))

    def get_all(
        self,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        filters: Optional[dict[str, Any]] = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """The scope's memories, oldest first, at most ``limit``; ``filters``
        as in ``search`` (equality on metadata)."""
        owner = self._owner(user_id, agent_id, run_id)
        rows = self._scoped(owner, user_id, agent_id, run_id)
        for key, want in (filters or {}).items():
            rows = [m for m in rows if (m.metadata or {}).get(key) == want]
        return {"results": [self._item(m) for m in rows[:limit]]}

    def search(
        self,
        query: str,
        *,
        user_id: Optional[str] = None,
        agent_id: Optional[str] = None,
        run_id: Optional[str] = None,
        limit: int = 100,
        filters: Optional[dict[str, Any]] = None,
        threshold: Optional[float] = None,
    ) -> dict[str, Any]:
        """The ``limit`` memories of the scope most similar to ``query``,
        best first, each with its ``score``; ``filters`` on metadata (and
        ``round``, ``created_at``, ``updated_at``) take the store's
        ``where`` operators (equality, ``$in``, ``$gte``, ``$lte``, ...);
        ``threshold`` drops scores below it."""
        owner = self._owner(user_id, agent_id, run_id)
        if owner not in self.store._handles().engine.owner_names():
            return {"results": []}
        where = {**(filters or {}), **self._scope(user_id, agent_id, run_id)}
        hits = self.store.recall(owner, query, k=limit, expand=False, where=where, threshold=threshold)
        return {"results": [self._item(m, m.score) for m in hits]}

    def history(self, memory_id: Union[str, int]) -> list[dict[str, Any]]:
        """The memory's changes, oldest first, shaped as mem0's history rows."""
        rid = self._rid(memory_id)
        try:
            changes = self.store.history(rid)
        except KeyError:
            return []
        return [
            {
                "id": f"{rid}-{n}",
                "memory_id": str(rid),
                "old_memory": c.old,
                "new_memory": c.new,
                "event": c.event,
                "created_at": _iso(c.at),
                "updated_at": None,
                "is_deleted": False,
                "actor_id": c.owner,
                "role": None,
            }
            for n, c in enumerate(changes)
        ]
