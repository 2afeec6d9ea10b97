"""``ConsensusMemory``: an ``autogen_core.memory.Memory`` on the consensus store.

One ``ConsensusMemory`` is one agent's view of a shared store: it deposits as
``owner`` and recalls only what ``owner`` owns. Give the agents of one team
memories on the same ``Store`` (or path, in separate processes): what two of
them add as the same fact becomes one record with both as owners. Memories
on one path in one process share one open ``Store`` (see
`open_stores`), so a memory loaded from a saved config while the
original is open works.

Needs the ``autogen`` extra: ``pip install 'agentsensus[autogen]'``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Any, Awaitable, Callable, Optional, TypeVar, Union

from autogen_core import CancellationToken, Component
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage
from pydantic import BaseModel
from typing_extensions import Self

from .. import embedders
from ..records import Memory as Record
from ..store import Store
from . import open_stores
from .judge_spec import judge_from_spec, judge_spec

__all__ = ["ConsensusMemory", "ConsensusMemoryConfig"]

T = TypeVar("T")
Embed = Callable[[list[str]], Any]

# The built-in embedders a config can name (a custom callable cannot be saved).
_NAMED: dict[str, Callable[[], Embed]] = {"hash": lambda: embedders.hash, "minilm": lambda: embedders.minilm}

# The MIME types a record can hold: its text is the content (JSON as canonical
# text, see _text). Anything else is refused as autogen's own memories do.
_TEXT_TYPES = (MemoryMimeType.TEXT.value, MemoryMimeType.MARKDOWN.value, MemoryMimeType.JSON.value)

# The keywords query takes beside the protocol's own (ChromaDB memory's names).
_QUERY_OPTIONS = frozenset({"k", "score_threshold"})

# Store options a config carries when the memory opened the store itself:
# JSON values only (a callable merge_policy cannot be saved).
_SAVED_OPTIONS = (
    "dim",
    "metric",
    "merge_policy",
    "sync",
    "exact_cutoff",
    "map_size",
    "expansion_search",
    "readonly",
    "judge_sees_owners",
)


class ConsensusMemoryConfig(BaseModel):
    """What ``dump_component`` saves: where the store is, whose view it is,
    and every option the memory and its store were made with. ``judge`` is a
    spec (`agentsensus.integrations.judge_spec`)."""

    path: str
    owner: str
    k: int = 5
    score_threshold: Optional[float] = None
    expand: bool = True
    embedder: str = "hash"
    name: Optional[str] = None
    judge: str = "exact"
    min_similarity: float = 0.75
    candidates: int = 8
    store_options: dict[str, Any] = {}


class ConsensusMemory(Memory, Component[ConsensusMemoryConfig]):
    """An AutoGen memory: ``add`` deposits, ``query`` recalls, and
    ``update_context`` puts what the last message recalls into the model
    context as a system message.

    ``store``: an open ``Store`` (the caller closes it) or a path (opened here
    with ``store_options``, or shared with the memories already open on it in
    this process; the last of them to `close` closes it). ``embed``
    defaults to the store's own, else ``embedders.hash``. ``k`` and
    ``expand`` are the recall's. ``score_threshold`` (as autogen-ext's
    ChromaDB memory has it) keeps only the records whose similarity to the
    query is at least that: the rest are neither returned by ``query`` nor
    put into the context by ``update_context`` (affiliated records come with
    the hits they hang on). ``query(..., k=n, score_threshold=t)`` overrides
    either for one call; another keyword raises ``TypeError``.
    ``split`` turns one content into statements (default: the whole text is
    one statement); statements of one ``add`` are joined by affiliation edges.

    Contents are text (``MemoryMimeType.TEXT`` or ``MARKDOWN``) or JSON (a
    ``dict``, or a ``str`` holding a JSON object, ``MemoryMimeType.JSON``);
    others raise ``ValueError("Unsupported content type: ...")``. JSON is
    stored as canonical text (sorted keys) and comes back as a ``dict`` with
    ``MemoryMimeType.JSON`` (so does a text that is exactly such canonical
    JSON); Markdown comes back as ``TEXT`` (a record keeps no MIME type). Their ``metadata`` is not kept, because a record may merge
    the contents of several agents; results carry the record's ``id``,
    ``owners``, ``score``, ``via`` and ``round`` as metadata instead.

    ``dump_component`` saves every option: the store's judge as a spec
    (``"exact"``, ``"never"``, ``"threshold:0.8"``, ``"llm:MODEL@URL"``),
    ``min_similarity``, ``candidates`` and the store options given here. A
    memory whose judge, embedder, ``split`` or ``merge_policy`` is a custom
    callable cannot be saved: ``dump_component`` raises ``ValueError``
    saying which (a reloaded memory would otherwise run something else).
    """

    component_type = "memory"
    component_config_schema = ConsensusMemoryConfig
    component_provider_override = "agentsensus.integrations.autogen.ConsensusMemory"

    def __init__(
        self,
        store: Union[Store, str, "os.PathLike[str]"],
        owner: str,
        *,
        k: int = 5,
        score_threshold: Optional[float] = None,
        expand: bool = True,
        embed: Optional[Embed] = None,
        split: Optional[Callable[[str], list[str]]] = None,
        name: Optional[str] = None,
        **store_options: Any,
    ) -> None:
        if not isinstance(owner, str) or not owner.strip():
            raise ValueError(f"owner must be a non-empty str, got {owner!r}")
        _check_k(k)
        _check_threshold(score_threshold)
        self._options: dict[str, Any] = {}
        if isinstance(store, Store):
            if store_options:
                raise TypeError("store_options apply only when store is a path")
            open_stores.lend(store)
            self.store, self._releases = store, False
        else:
            chosen = embed if embed is not None else embedders.hash
            store_options.setdefault("dim", getattr(chosen, "dim", None))
            self._options = dict(store_options)
            self.store, self._releases = open_stores.acquire(store, store_options)
        self.embed: Embed = embed or self.store.embed or embedders.hash
        self.owner = owner
        self.k = k
        self.score_threshold = score_threshold
        self.expand = expand
        self.split = split
        self._name = name or f"consensus_memory[{owner}]"

    @property
    def name(self) -> str:
        """This memory's name (for logs and configs)."""
        return self._name

    # -- the Memory protocol ----------------------------------------------------

    async def add(self, content: MemoryContent, cancellation_token: Optional[CancellationToken] = None) -> None:
        """Deposits ``content`` as ``owner``: statements the store's judge
        finds equivalent to existing records merge into them."""
        statements = self._statements(content)
        if not statements:
            return

        async def deposit() -> None:
            vectors = await asyncio.to_thread(self.embed, statements)
            await self.store.adeposit(self.owner, statements, vectors)

        await self._cancellable(deposit(), cancellation_token)

    async def query(
        self,
        query: Union[str, MemoryContent] = "",
        cancellation_token: Optional[CancellationToken] = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The records ``owner`` owns that are nearest ``query`` (and, with
        ``expand``, their affiliated records), best first, none scoring
        below ``score_threshold``. An empty query lists everything ``owner``
        owns, oldest first. ``k=`` and ``score_threshold=`` override the
        memory's for this call; any other keyword raises ``TypeError``."""
        unknown = sorted(set(kwargs) - _QUERY_OPTIONS)
        if unknown:
            raise TypeError(f"query() got an unexpected keyword argument {unknown[0]!r}")
        text = query if isinstance(query, str) else _text(query)
        k = _check_k(kwargs.get("k", self.k))
        floor = _check_threshold(kwargs.get("score_threshold", self.score_threshold))

        def run() -> list[Record]:
            if not text.strip():
                return [self.store.get(i) for i in self.store.owned(self.owner)]
            vec = self.embed([text])
            return self.store.recall(self.owner, vec, k=k, expand=self.expand, threshold=floor)

        rows = await self._cancellable(asyncio.to_thread(run), cancellation_token)
        return MemoryQueryResult(results=[_content(m) for m in rows])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recalls with the last text message of ``model_context`` and, when
        anything is recalled at or above ``score_threshold``, adds it as one
        system message."""
        last = ""
        for message in reversed(await model_context.get_messages()):
            if isinstance(message.content, str):
                last = message.content
                break
        if not last.strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self.query(last)
        if found.results:
            lines = [f"{i}. {_text(m)}" for i, m in enumerate(found.results, 1)]
            text = "\nRelevant memory content (most relevant first):\n" + "\n".join(lines) + "\n"
            await model_context.add_message(SystemMessage(content=text))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """``owner`` forgets every record it owns. Records other agents also
        own stay theirs; the rest are deleted."""

        def run() -> None:
            for record in self.store.owned(self.owner):
                self.store.forget(self.owner, record)

        await asyncio.to_thread(run)

    async def close(self) -> None:
        """Lets go of the store when this memory opened it by path: the last
        memory on that path closes it. Calling it again does nothing."""
        if self._releases:
            self._releases = False
            open_stores.release(self.store)

    # -- component config -------------------------------------------------------

    def _to_config(self) -> ConsensusMemoryConfig:
        named = next((n for n, get in _NAMED.items() if get() is self.embed), None)
        if named is None:
            raise ValueError(
                f"a ConsensusMemory with a custom embed cannot be saved as a config (it names {sorted(_NAMED)})"
            )
        if self.split is not None:
            raise ValueError("a ConsensusMemory with a custom split cannot be saved as a config")
        options = {k: v for k, v in self._options.items() if k in _SAVED_OPTIONS}
        if callable(options.get("merge_policy")):
            raise ValueError("a ConsensusMemory whose store has a custom merge_policy cannot be saved as a config")
        if "metric" in options:
            options["metric"] = str(options["metric"])
        return ConsensusMemoryConfig(
            path=os.path.abspath(self.store.path),
            owner=self.owner,
            k=self.k,
            score_threshold=self.score_threshold,
            expand=self.expand,
            embedder=named,
            name=self._name,
            judge=judge_spec(self.store.judge),
            min_similarity=self.store.min_similarity,
            candidates=self.store.candidates,
            store_options=options,
        )

    @classmethod
    def _from_config(cls, config: ConsensusMemoryConfig) -> Self:
        if config.embedder not in _NAMED:
            raise ValueError(f"embedder must be one of {sorted(_NAMED)}, got {config.embedder!r}")
        unknown = sorted(set(config.store_options) - set(_SAVED_OPTIONS))
        if unknown:
            raise ValueError(f"store_options {unknown} are not store options a config can carry")
        embed = _NAMED[config.embedder]()
        return cls(
            config.path,
            config.owner,
            k=config.k,
            score_threshold=config.score_threshold,
            expand=config.expand,
            embed=embed,
            name=config.name,
            judge=judge_from_spec(config.judge),
            min_similarity=config.min_similarity,
            candidates=config.candidates,
            **config.store_options,
        )

    # -- helpers ----------------------------------------------------------------

    def _statements(self, content: MemoryContent) -> list[str]:
        text = _text(content)
        parts = self.split(text) if self.split is not None and not _is_json(content) else [text]
        return [p for p in parts if p.strip()]

    @staticmethod
    async def _cancellable(work: Awaitable[T], token: Optional[CancellationToken]) -> T:
        task = asyncio.ensure_future(work)
        if token is not None:
            token.link_future(task)
        return await task


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    return k


def _check_threshold(threshold: Any) -> Optional[float]:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold):
        raise ValueError(f"score_threshold must be a number or None, got {threshold!r}")
    return float(threshold)


def _mime(content: MemoryContent) -> str:
    m = content.mime_type
    return m.value if isinstance(m, MemoryMimeType) else str(m)


def _is_json(content: MemoryContent) -> bool:
    return isinstance(content.content, dict) or _mime(content) == MemoryMimeType.JSON.value


def _canonical(value: dict[str, Any]) -> str:
    """The one text of a JSON object: what is stored, and what marks a
    record's text as JSON on the way back."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _text(content: MemoryContent) -> str:
    """The text a content is stored as: text as is, JSON as canonical text;
    ``ValueError`` for what a record cannot hold."""
    value, mime = content.content, _mime(content)
    if mime not in _TEXT_TYPES or isinstance(value, bytes) or not isinstance(value, (str, dict)):
        raise ValueError(f"Unsupported content type: {mime} ({type(value).__name__})")
    if isinstance(value, dict):
        return _canonical(value)
    if mime == MemoryMimeType.JSON.value:
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise ValueError("JSON content must be a dict or a str holding a JSON object")
        return _canonical(parsed)
    return value


def _json_of(text: str) -> Optional[dict[str, Any]]:
    """The object a record's text holds when it is canonical JSON, else None."""
    if not text.startswith("{"):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and _canonical(parsed) == text else None


def _content(m: Record) -> MemoryContent:
    meta = {"id": m.id, "owners": sorted(m.owners), "score": m.score, "via": m.via, "round": m.round}
    obj = _json_of(m.text)
    if obj is not None:
        return MemoryContent(content=obj, mime_type=MemoryMimeType.JSON, metadata=meta)
    return MemoryContent(content=m.text, mime_type=MemoryMimeType.TEXT, metadata=meta)
