"""``ConsensusMemoryBlock``: a LlamaIndex memory block on the consensus store.

LlamaIndex's ``Memory`` keeps a short-term queue of chat messages and, when
the queue passes its token limit, flushes the oldest messages into its
memory blocks; on ``get`` it asks each block for text to put before the
chat history. One ``ConsensusMemoryBlock`` is one agent's long-term view of
a shared store: a flush is deposited as ``owner``, and ``get`` recalls only
what ``owner`` owns, with the latest user message as the query. Give the
agents of a team blocks on the same ``Store`` (or path): what two of them
flush as the same fact becomes one record with both as owners.

Needs the ``llama-index`` extra: ``pip install 'agentsensus[llama-index]'``.
"""

from __future__ import annotations

import asyncio
import math
import os
from typing import Any, Callable, Optional, Union

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.memory.memory import BaseMemoryBlock
from pydantic import PrivateAttr

from .. import embedders
from .._store.validation import check_owner
from ..records import Memory as Record
from ..store import Store
from . import open_stores

__all__ = ["ConsensusMemoryBlock"]

Embed = Callable[[list[str]], Any]

# What the block puts before the recalled lines (inside Memory's own
# <memory><name> ... </name></memory> template).
_HEADER = "Relevant memory (most relevant first):"

# Memory asks a block to shrink by a number of its tokenizer's tokens; the
# block drops that many words. A tokenizer makes at least one token of each
# word (tiktoken's encodings split at spaces), so that frees enough tokens,
# and Memory does not then drop the whole block.


class ConsensusMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex ``BaseMemoryBlock`` that deposits what the memory
    flushes and recalls what ``owner`` owns.

    ``store``: an open ``Store`` (the caller closes it) or a path (opened
    here with ``store_options``, or shared with the adapters already open on
    it in this process; `close` lets go of it). ``embed`` defaults to
    the store's own, else ``embedders.hash``.

    A flush (``aput``) is one deposit: each non-system message with text is
    one statement (its text blocks joined; repeats in one flush count once),
    so the statements of one flush are joined by affiliation edges, and a
    statement the store's judge finds equivalent to a record merges into it.
    A record keeps the words, not the message: role and session are not
    stored, so two agents' flushes of the same event can meet in one record.

    ``get`` (``aget``) recalls with the text of the latest user message
    (the chat history plus ``Memory.get``'s ``input``): the ``k`` nearest
    records ``owner`` owns, none scoring below ``threshold``, and with
    ``expand`` the records one affiliation edge from them that ``owner``
    also owns. It returns them one line each (a record's whitespace
    collapsed) under a header, or ``""`` (nothing to insert) when there is
    no user text or nothing is recalled.
    Recall is not filtered by session: the block is the agent's memory
    across sessions. When ``Memory`` must shorten its blocks (``priority``
    above 0), the least relevant lines go first.

    ``name``, ``description``, ``priority`` and ``accept_short_term_memory``
    are ``BaseMemoryBlock``'s.
    """

    owner: str
    k: int = 5
    threshold: Optional[float] = None
    expand: bool = True

    _store: Store = PrivateAttr()
    _embed: Embed = PrivateAttr()
    _releases: bool = PrivateAttr(default=False)

    def __init__(
        self,
        store: Union[Store, str, "os.PathLike[str]"],
        owner: str,
        *,
        k: int = 5,
        threshold: Optional[float] = None,
        expand: bool = True,
        embed: Optional[Embed] = None,
        name: str = "consensus_memory",
        description: Optional[str] = None,
        priority: int = 0,
        accept_short_term_memory: bool = True,
        **store_options: Any,
    ) -> None:
        # The store's own rule for names, now rather than at the first flush.
        owner = check_owner(owner)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold)
        ):
            raise ValueError(f"threshold must be a number or None, got {threshold!r}")
        if embed is not None and not callable(embed):
            raise TypeError("embed must be a callable list[str] -> float32 array")
        if isinstance(store, Store) and store_options:
            raise TypeError("store_options apply only when store is a path")
        if not isinstance(store, (Store, str, os.PathLike)):
            raise TypeError(f"store must be a Store or a path, got {type(store).__name__}")
        # This class's own fields go in as a dict: the base class's typed
        # __init__ (pydantic) names only the base class's fields.
        mine: dict[str, Any] = {"owner": owner, "k": k, "expand": bool(expand)}
        mine["threshold"] = None if threshold is None else float(threshold)
        super().__init__(
            name=name,
            description=description,
            priority=priority,
            accept_short_term_memory=accept_short_term_memory,
            **mine,
        )
        if isinstance(store, Store):
            open_stores.lend(store)
            self._store, self._releases = store, False
        else:
            chosen = embed if embed is not None else embedders.hash
            store_options.setdefault("dim", getattr(chosen, "dim", None))
            self._store, self._releases = open_stores.acquire(store, store_options)
        self._embed = embed or self._store.embed or embedders.hash

    @property
    def store(self) -> Store:
        """The store this block deposits into and recalls from."""
        return self._store

    @property
    def embed(self) -> Embed:
        """The embedder of deposits and queries: ``embed``, else the store's, else ``embedders.hash``."""
        return self._embed

    # -- BaseMemoryBlock ----------------------------------------------------------

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Deposits the flushed ``messages`` as ``owner``, in one deposit."""
        statements = list(dict.fromkeys(t for t in (_text(m) for m in messages if m.role.value != "system") if t))
        if not statements:
            return
        vectors = await asyncio.to_thread(self._embed, statements)
        await self._store.adeposit(self.owner, statements, vectors)

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        """What ``owner`` owns that the latest user message recalls, one line
        a record, or ``""``. ``block_kwargs`` (``session_id`` and what the
        caller gave ``Memory.get``) are not used."""
        query = next((t for t in (_text(m) for m in reversed(messages or []) if m.role.value == "user") if t), "")
        if not query:
            return ""

        def run() -> list[Record]:
            vec = self._embed([query])
            return self._store.recall(self.owner, vec, k=self.k, expand=self.expand, threshold=self.threshold)

        found = await asyncio.to_thread(run)
        if not found:
            return ""
        # One line a record (its whitespace collapsed), so truncation drops whole records.
        return "\n".join([_HEADER, *(f"- {' '.join(r.text.split())}" for r in found)])

    async def atruncate(self, content: str, tokens_to_truncate: int) -> Optional[str]:
        """``content`` without its last (least relevant) lines, at least
        ``tokens_to_truncate`` words shorter; ``None`` when no record is left."""
        lines = content.split("\n")
        dropped = 0
        while len(lines) > 1 and dropped < tokens_to_truncate:
            dropped += len(lines.pop().split())
        return "\n".join(lines) if len(lines) > 1 else None

    # -- lifecycle ------------------------------------------------------------------

    def close(self) -> None:
        """Lets go of the store when this block opened it by path: the last
        adapter on that path closes it. Calling it again does nothing."""
        if self._releases:
            self._releases = False
            open_stores.release(self._store)


def _text(message: ChatMessage) -> str:
    """A message's words: its text blocks joined by newlines, stripped."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()
