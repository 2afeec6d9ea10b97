"""``ConsensusMemory``: an ``autogen_core.memory.Memory`` on the consensus store.

One ``ConsensusMemory`` is one agent's view of a shared store: it deposits as
``owner`` and recalls only what ``owner`` owns. Give the agents of one team
memories on the same ``Store`` (or path, in separate processes): what two of
them add as the same fact becomes one record with both as owners.

Needs the ``autogen`` extra: ``pip install 'agentsensus[autogen]'``.
"""

from __future__ import annotations

import asyncio
import json
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

__all__ = ["ConsensusMemory", "ConsensusMemoryConfig"]

T = TypeVar("T")
Embed = Callable[[list[str]], Any]

# The built-in embedders a config can name (a custom callable cannot be saved).
_NAMED: dict[str, Callable[[], Embed]] = {"hash": lambda: embedders.hash, "minilm": lambda: embedders.minilm}


class ConsensusMemoryConfig(BaseModel):
    """What ``dump_component`` saves: where the store is and whose view it is."""

    path: str
    owner: str
    k: int = 5
    expand: bool = True
    embedder: str = "hash"
    name: Optional[str] = None


class ConsensusMemory(Memory, Component[ConsensusMemoryConfig]):
    """An AutoGen memory: ``add`` deposits, ``query`` recalls, and
    ``update_context`` puts what the last message recalls into the model
    context as a system message.

    ``store``: an open ``Store`` (the caller closes it) or a path (opened here
    with ``store_options``, closed by :meth:`close`). ``embed`` defaults to
    the store's own, else ``embedders.hash``. ``k`` and ``expand`` are the
    recall's (``query(..., k=n)`` overrides ``k``). ``split`` turns one
    content into statements (default: the whole text is one statement);
    statements of one ``add`` are joined by affiliation edges.

    Contents must be text: ``str``, or a ``dict`` (stored as sorted JSON).
    Their ``metadata`` is not kept, because a record may merge the contents
    of several agents; results carry the record's ``id``, ``owners``,
    ``score``, ``via`` and ``round`` as metadata instead.
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
        expand: bool = True,
        embed: Optional[Embed] = None,
        split: Optional[Callable[[str], list[str]]] = None,
        name: Optional[str] = None,
        **store_options: Any,
    ) -> None:
        if not isinstance(owner, str) or not owner.strip():
            raise ValueError(f"owner must be a non-empty str, got {owner!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if isinstance(store, Store):
            if store_options:
                raise TypeError("store_options apply only when store is a path")
            self.store, self._owns_store = store, False
        else:
            chosen = embed if embed is not None else embedders.hash
            store_options.setdefault("dim", getattr(chosen, "dim", None))
            self.store, self._owns_store = Store(store, **store_options), True
        self.embed: Embed = embed or self.store.embed or embedders.hash
        self.owner = owner
        self.k = k
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
        ``expand``, their affiliated records), best first. An empty query
        lists everything ``owner`` owns, oldest first. ``k=`` overrides ``k``."""
        text = query if isinstance(query, str) else _text(query)
        k = int(kwargs.get("k", self.k))

        def run() -> list[Record]:
            if not text.strip():
                return [self.store.get(i) for i in self.store.owned(self.owner)]
            vec = self.embed([text])
            return self.store.recall(self.owner, vec, k=k, expand=self.expand)

        rows = await self._cancellable(asyncio.to_thread(run), cancellation_token)
        return MemoryQueryResult(results=[_content(m) for m in rows])

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Recalls with the last text message of ``model_context`` and, when
        anything is recalled, adds it as one system message."""
        last = ""
        for message in reversed(await model_context.get_messages()):
            if isinstance(message.content, str):
                last = message.content
                break
        if not last.strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        found = await self.query(last)
        if found.results:
            texts = [m.content for m in found.results if isinstance(m.content, str)]
            lines = [f"{i}. {t}" for i, t in enumerate(texts, 1)]
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
        """Closes the store when this memory opened it."""
        if self._owns_store:
            self.store.close()

    # -- component config -------------------------------------------------------

    def _to_config(self) -> ConsensusMemoryConfig:
        named = next((n for n, get in _NAMED.items() if get() is self.embed), None)
        if named is None:
            raise ValueError("a ConsensusMemory with a custom embed cannot be saved as a config")
        return ConsensusMemoryConfig(
            path=self.store.path, owner=self.owner, k=self.k, expand=self.expand, embedder=named, name=self._name
        )

    @classmethod
    def _from_config(cls, config: ConsensusMemoryConfig) -> Self:
        if config.embedder not in _NAMED:
            raise ValueError(f"embedder must be one of {sorted(_NAMED)}, got {config.embedder!r}")
        embed = _NAMED[config.embedder]()
        return cls(config.path, config.owner, k=config.k, expand=config.expand, embed=embed, name=config.name)

    # -- helpers ----------------------------------------------------------------

    def _statements(self, content: MemoryContent) -> list[str]:
        text = _text(content)
        parts = self.split(text) if self.split is not None else [text]
        return [p for p in parts if p.strip()]

    @staticmethod
    async def _cancellable(work: Awaitable[T], token: Optional[CancellationToken]) -> T:
        task = asyncio.ensure_future(work)
        if token is not None:
            token.link_future(task)
        return await task


def _text(content: MemoryContent) -> str:
    """The text of a content: ``str`` as is, ``dict`` as sorted JSON."""
    value = content.content
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    raise TypeError(f"ConsensusMemory stores text: got content of type {type(value).__name__}")


def _content(m: Record) -> MemoryContent:
    meta = {"id": m.id, "owners": sorted(m.owners), "score": m.score, "via": m.via, "round": m.round}
    return MemoryContent(content=m.text, mime_type=MemoryMimeType.TEXT, metadata=meta)
