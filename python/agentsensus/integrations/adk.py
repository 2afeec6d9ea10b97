"""``ConsensusMemoryService``: a Google ADK ``BaseMemoryService`` on the consensus store.

How ADK's identities map onto the store (docs/integrations-adk.md):

- the scope of a record is the pair (``app_name``, ``user_id``)
  (`scope_name`): one user's memories never merge with, and are never
  shown to the judge beside, another user's or another app's;
- each event's ``author`` is an owner (`owner_name`: the author as it
  serves that user in that app; ADK's ``"user"`` author is the user). The
  user also owns every event of their own sessions: they saw it. So what two
  agents of one app said as the same fact, in one session or in two, is one
  record owned by both agents and the user;
- ``search_memory(app_name, user_id, query)`` is the user's view (ADK names
  no agent there): the records the user owns, that is every record of that
  user's sessions in that app, and nothing else.

Each event is deposited once (a batch key per app, user, session and event
id), so adding a session again as it grows writes only its new events, and
an event whose memory was deleted is not written back.

Needs the ``adk`` extra: ``pip install 'agentsensus[adk]'``.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import math
import os
import unicodedata
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from google.genai import types

from .. import embedders
from .._store.validation import MAX_OWNER_BYTES
from ..records import Memory as Record
from ..store import Store
from . import open_stores

__all__ = ["ConsensusMemoryService", "owner_name", "scope_name", "USER_AUTHOR"]

Embed = Callable[[list[str]], Any]

#: The author ADK gives the events a user sends.
USER_AUTHOR = "user"

# ADK's own bucket for events added with no session id (in_memory_memory_service.py).
_NO_SESSION = "__unknown_session_id__"
# The message of Store.deposit_many for a batch key already used (batch_keys.recorded_result).
_KEY_USED = "was already used for a different batch"


def scope_name(app_name: str, user_id: str) -> str:
    """The store scope of one user's memories in one app: the pair as a JSON
    array (ASCII), so no two pairs share a name whatever characters they hold."""
    return _name("scope", [_id(app_name, "app_name"), _id(user_id, "user_id")])


def owner_name(app_name: str, user_id: str, author: str) -> str:
    """The owner an event's ``author`` deposits as: the author as it serves
    ``user_id`` in ``app_name`` (``author`` ``"user"``: the user), the triple
    as a JSON array (ASCII)."""
    return _name("owner", [_id(app_name, "app_name"), _id(user_id, "user_id"), _id(author, "author")])


class ConsensusMemoryService(BaseMemoryService):
    """An ADK memory service: ``add_session_to_memory`` and
    ``add_events_to_memory`` deposit each event's text as its author (and
    as the user), ``add_memory`` deposits memories directly,
    ``search_memory`` recalls the user's records, ``delete_memory`` removes
    one. Give it to ``Runner(memory_service=...)``; ADK's ``load_memory``
    and ``PreloadMemoryTool`` then search it.

    ``store``: an open ``Store`` (the caller closes it) or a path (opened here
    with ``store_options``, e.g. ``judge=``, or shared with the adapters
    already open on it in this process; `close` lets go of it).
    ``embed`` (with a path only; default ``embedders.hash``) is the store's
    embedder; a ``Store`` given embeds with its own and must have one.

    A search returns at most ``k`` records (ADK's in-memory service returns
    ten), best first by vector and word ranks fused: those that share a word
    with the query, and those that share none but whose similarity to it is
    at least ``min_score``.
    """

    def __init__(
        self,
        store: Union[Store, str, "os.PathLike[str]"],
        *,
        embed: Optional[Embed] = None,
        k: int = 10,
        min_score: float = 0.5,
        **store_options: Any,
    ) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or math.isnan(min_score):
            raise ValueError(f"min_score must be a number, got {min_score!r}")
        if embed is not None and not callable(embed):
            raise TypeError("embed must be a callable list[str] -> vectors")
        if isinstance(store, Store):
            if store_options or embed is not None:
                raise TypeError("embed and store_options apply only when store is a path (a Store embeds with its own)")
            if store.embed is None:
                raise TypeError("the store has no embed: open it with Store(path, embed=...)")
            open_stores.lend(store)
            self.store, self._releases = store, False
        else:
            chosen = embed if embed is not None else embedders.hash
            store_options.setdefault("dim", getattr(chosen, "dim", None))
            store_options.setdefault("embed", chosen)
            self.store, self._releases = open_stores.acquire(store, store_options)
        # Deposits and searches embed alike: the store's embedder (recall's lexical ranking uses it).
        self.embed: Embed = self.store.embed or embedders.hash
        self.k = k
        self.min_score = float(min_score)

    # -- BaseMemoryService ------------------------------------------------------

    async def add_session_to_memory(self, session: Session) -> None:
        """Deposits the session's events that have text and were not
        deposited before (ADK may add a session many times as it grows)."""
        await self._add_events(session.app_name, session.user_id, session.id, session.events)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: Optional[str] = None,
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Deposits ``events`` (a delta) as `add_session_to_memory`
        does; an event id already deposited for that session is skipped.
        ``custom_metadata`` goes into each event's metadata (JSON values)."""
        await self._add_events(app_name, user_id, session_id or _NO_SESSION, events, custom_metadata)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        """Deposits each memory's text as its ``author`` (the user when it
        names none) and as the user. Its ``custom_metadata`` and
        ``timestamp`` are kept with it."""
        scope = scope_name(app_name, user_id)
        user = owner_name(app_name, user_id, USER_AUTHOR)
        batches: list[tuple[str, str, dict[str, Any], Optional[str]]] = []
        for n, entry in enumerate(memories):
            text = _text(entry.content)
            if not text:
                raise ValueError(f"memories[{n}] has no text to remember")
            author = entry.author or USER_AUTHOR
            meta: dict[str, Any] = {
                "author": author,
                "timestamp": entry.timestamp,
                "custom_metadata": dict(entry.custom_metadata),
            }
            if custom_metadata:
                meta["call_metadata"] = dict(custom_metadata)
            batches.append((owner_name(app_name, user_id, author), text, meta, None))
        await self._deposit(scope, user, batches)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's records nearest ``query`` (see the class), best first,
        as ``MemoryEntry``: ``id`` the record id, ``author`` who last said
        it, ``timestamp`` when, ``custom_metadata["owners"]`` the authors
        that own it (``"user"``, the user, owns every record of their
        sessions), with ``score``, ``lexical_score``, ``session_id`` and
        ``event_id``."""
        user = owner_name(app_name, user_id, USER_AUTHOR)
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        if not query.strip():
            return SearchMemoryResponse()
        query = _nfc(query)

        def run() -> list[Record]:
            return self.store.recall(user, query, k=self.k, expand=False, lexical=True)

        rows = await asyncio.to_thread(run)
        kept = [m for m in rows if (m.lexical_score or 0.0) > 0.0 or (m.score or 0.0) >= self.min_score]
        return SearchMemoryResponse(memories=[_entry(m, app_name, user_id) for m in kept])

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: Optional[str] = None) -> None:
        """Removes the record ``memory_id`` (an id ``search_memory`` gave)
        from the user's memory: every owner forgets it, so it is gone. An id
        that names no record of this user does nothing, as in ADK's own
        services."""
        if not memory_id:
            return
        user = owner_name(app_name, user_id, USER_AUTHOR)
        scope = scope_name(app_name, user_id)
        try:
            rid = int(memory_id)
        except (TypeError, ValueError):
            return

        def run() -> None:
            try:
                record = self.store.get(rid)
            except KeyError:
                return
            # Another user's record, or another app's: not this user's to delete.
            if user not in record.owners or self.store.scope_of(rid) != scope:
                return
            for owner in sorted(record.owners):
                try:
                    self.store.forget(owner, rid)
                except KeyError:
                    pass  # a concurrent delete took it first

        await asyncio.to_thread(run)

    # -- lifecycle ----------------------------------------------------------------

    def close(self) -> None:
        """Lets go of the store when this service opened it by path (the last
        adapter on that path closes it). Calling it again does nothing."""
        if self._releases:
            self._releases = False
            open_stores.release(self.store)

    # -- helpers ------------------------------------------------------------------

    async def _add_events(
        self,
        app_name: str,
        user_id: str,
        session_id: str,
        events: Sequence[Event],
        custom_metadata: Optional[Mapping[str, object]] = None,
    ) -> None:
        scope = scope_name(app_name, user_id)
        user = owner_name(app_name, user_id, USER_AUTHOR)
        batches: list[tuple[str, str, dict[str, Any], Optional[str]]] = []
        for event in events:
            text = _text(event.content)
            # A streamed chunk is followed by the whole message: that one is kept.
            if not text or event.partial:
                continue
            author = event.author or USER_AUTHOR
            meta: dict[str, Any] = {
                "author": author,
                "event_id": event.id,
                "session_id": session_id,
                "timestamp": _iso(event.timestamp),
            }
            if custom_metadata:
                meta["custom_metadata"] = dict(custom_metadata)
            key = _batch_key(app_name, user_id, session_id, event.id)
            batches.append((owner_name(app_name, user_id, author), text, meta, key))
        await self._deposit(scope, user, batches)

    async def _deposit(
        self, scope: str, user: str, batches: Sequence[tuple[str, str, dict[str, Any], Optional[str]]]
    ) -> None:
        """One deposit per memory: its author's statement and the user's (the
        same words), exactly once when it has a batch key."""
        if not batches:
            return
        vectors = await asyncio.to_thread(self.embed, [text for _, text, _, _ in batches])
        for (author, text, meta, key), vec in zip(batches, vectors):
            # A 4-tuple item carries its owner's metadata (Store.deposit_many).
            items: list[Any] = [(author, [text], [vec], meta)]
            if author != user:
                items.append((user, [text], [vec], meta))
            try:
                await self.store.adeposit_many(items, batch_key=key, scope=scope)
            except ValueError as e:
                # The event id was deposited before with other words: ADK keeps the first.
                if key is None or _KEY_USED not in str(e):
                    raise


def _id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty str, got {value!r}")
    return value


def _name(what: str, parts: list[str]) -> str:
    name = json.dumps(parts, ensure_ascii=True, separators=(",", ":"))
    if len(name) > MAX_OWNER_BYTES:
        raise ValueError(f"the {what} name of {parts!r} is {len(name)} bytes, over {MAX_OWNER_BYTES}: use shorter ids")
    return name


def _batch_key(app_name: str, user_id: str, session_id: str, event_id: str) -> str:
    """One event's key: a digest, so any ids fit the key's size."""
    raw = json.dumps([app_name, user_id, session_id, event_id], ensure_ascii=True)
    return "adk-event:" + hashlib.blake2b(raw.encode("ascii"), digest_size=20).hexdigest()


def _text(content: Optional[types.Content]) -> str:
    """An event's words: its text parts joined, thoughts left out (ADK's
    memory tools use the text parts only), in NFC (see `_nfc`)."""
    if content is None or not content.parts:
        return ""
    return _nfc(" ".join(p.text for p in content.parts if p.text and not p.thought).strip())


def _nfc(text: str) -> str:
    """Composed Unicode: the lexical index splits words at a combining mark,
    so a decomposed "Cafe\u0301" would not match "Café" (ADK's own service
    compares in NFC too)."""
    return unicodedata.normalize("NFC", text)


def _iso(timestamp: Optional[float]) -> Optional[str]:
    """ADK's own format for a memory's time (google.adk.memory._utils)."""
    if timestamp is None:
        return None
    return datetime.datetime.fromtimestamp(timestamp).isoformat()


def _entry(m: Record, app_name: str, user_id: str) -> MemoryEntry:
    meta = m.metadata or {}
    author = meta.get("author")
    prefix = json.dumps([app_name, user_id], ensure_ascii=True, separators=(",", ":"))[:-1] + ","
    authors = sorted(json.loads(o)[2] for o in m.owners if o.startswith(prefix))
    extra: dict[str, Any] = {"owners": authors, "score": m.score, "lexical_score": m.lexical_score}
    for name in ("session_id", "event_id", "custom_metadata"):
        if name in meta:
            extra[name] = meta[name]
    role = "user" if author == USER_AUTHOR else "model"
    return MemoryEntry(
        id=str(m.id),
        content=types.Content(role=role, parts=[types.Part(text=m.text)]),
        author=author if isinstance(author, str) else None,
        timestamp=meta.get("timestamp") if isinstance(meta.get("timestamp"), str) else None,
        custom_metadata=extra,
    )
