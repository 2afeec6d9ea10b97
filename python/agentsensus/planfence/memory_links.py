"""Memory links: a plan's inputs that are records of a store (``memories=``).

A memory link is an ordinary lineage input with a reserved key, so the
lineage format, its invariants and the heads codec stay as they are:

- ``memory:<id>``, owned by `MEMORY_OWNER`: record ``id`` of this store
  (``Fence.derive(..., memories=[id])`` writes it);
- ``memory:<id>@<owner>``, owned by ``owner``: record ``id`` of the store
  whose heads server answers for ``owner`` (linked with ``Fence.observe``,
  as any input another store owns).

A memory's version is the id of the record that stands for it: its own id
while it is the last record of its chain (nothing superseded it), the id of
the record that superseded it once one did, and no version (unknown) once it
is deleted. A link records the memory's own id, so a check finds it stale as
soon as any owner's statement superseded it, or once it is gone.
"""

from __future__ import annotations

from typing import Any, Optional

from .. import _core

__all__ = [
    "MEMORY_OWNER",
    "PREFIX",
    "MARKER_KEY",
    "MARKER_VALUE",
    "memory_key",
    "parse_memory_key",
    "memory_head",
    "live_text",
    "record_text",
    "decode_query_keys",
    "decode_answer",
    "memory_reason",
]

#: The lineage owner of this store's memory links: not an agent; the store
#: answers these links from its records. Reserved: no key, plan or server may
#: use it as an owner.
MEMORY_OWNER = "(memories)"
PREFIX = "memory:"
#: A key the first local memory link writes beside it: a check without a
#: heads source looks for it (one lookup) before it walks for memory links.
MARKER_KEY = "memory:"
MARKER_VALUE = b"this lineage holds links to records of its store"


def memory_key(record_id: int, owner: Optional[str] = None) -> str:
    """The lineage key of record ``record_id``: ``memory:<id>`` for a record
    of this store, ``memory:<id>@<owner>`` for one of the store that answers
    for ``owner``."""
    if isinstance(record_id, bool) or not isinstance(record_id, int):
        raise TypeError(f"a record id must be an int, got {type(record_id).__name__}")
    if record_id < 1:
        raise ValueError(f"record ids start at 1, got {record_id}")
    return f"{PREFIX}{record_id}" if owner is None else f"{PREFIX}{record_id}@{owner}"


def parse_memory_key(key: str) -> Optional[tuple[int, Optional[str]]]:
    """``(id, owner)`` of a memory key (owner ``None`` for this store's
    form); ``None`` for any other key."""
    if not key.startswith(PREFIX):
        return None
    digits, at, owner = key[len(PREFIX) :].partition("@")
    if not digits.isascii() or not digits.isdigit() or digits[0] == "0" or (at and not owner):
        return None
    return int(digits), (owner if at else None)


def memory_head(engine: Any, rid: int) -> int:
    """The version record ``rid`` stands at: ``rid`` while nothing
    superseded it, the record that superseded it once one did, 0 when it is
    not stored."""
    try:
        engine.get(rid)
    except KeyError:
        return 0
    newer = engine.versions_of([rid])[0][1]
    return rid if newer is None else int(newer)


def record_text(engine: Any, rid: int) -> Optional[str]:
    """Record ``rid``'s text, or ``None`` when it is not stored."""
    try:
        return str(engine.get(rid)[1])
    except KeyError:
        return None


def live_text(engine: Any, rid: Any, name: str) -> str:
    """The text of ``rid``, a live record (stored, and the last of its
    chain); a one-line ``ValueError`` (``TypeError`` for a non-int) otherwise."""
    if isinstance(rid, bool) or not isinstance(rid, int):
        raise TypeError(f"{name} must be a record id (int), got {type(rid).__name__}")
    text = record_text(engine, rid) if rid >= 1 else None
    if text is None:
        raise ValueError(f"{name}: record {rid} is not a live record of this store")
    head = memory_head(engine, rid)
    if head != rid:
        raise ValueError(f"{name}: record {rid} is not a live record: record {head} superseded it; link that one")
    return text


def decode_query_keys(query: bytes) -> list[str]:
    """The keys of an encoded head query, in order (the engine's heads codec);
    ``ValueError`` when malformed."""
    return [key for key, _recorded in _core.Lineage.decode_query(query)]


def decode_answer(answer: bytes, expected: int) -> list[tuple[int, bool]]:
    """``(head, same)`` of each entry of an encoded head answer of
    ``expected`` entries; ``ValueError`` when malformed."""
    return [(int(h), bool(same)) for h, same in _core.Lineage.decode_answer(answer, expected)]


def memory_reason(rid: int, where: str, old: Optional[str], head: Optional[int], new: Optional[str]) -> str:
    """Why a memory link is stale, naming the memory (id and text) and,
    when it was superseded, the record that superseded it."""
    this = f"memory {rid}" + (f" ({old!r})" if old is not None else "") + where
    if not head:
        return f"{this} was deleted (no owner holds it any more)"
    return f"{this} was superseded by record {head}" + (f" ({new!r})" if new is not None else "")
