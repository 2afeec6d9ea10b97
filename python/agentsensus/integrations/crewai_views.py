"""How a CrewAI memory record sits on the consensus store: its owner, its
store scope, and the per-owner metadata ("view") that keeps CrewAI's fields.

CrewAI saves an agent's memories under ``<root>/agent/<role>/...`` (its
agent executor does, when the crew's memory has a ``root_scope``, which
``Crew(memory=True)`` sets to ``/crew/<crew name>``). The rule
(`owner_and_scope`):

- the owner is the segment after the first ``agent`` segment of the record's
  scope path; without one, the record's ``source``; without that, the
  backend's default owner. An owner set explicitly
  (`agentsensus.integrations.crewai.acting_as`) comes first;
- the store scope (where records merge: `agentsensus.scopes`) is the
  path above the ``agent`` segment (``/crew/research``), or the whole path
  when it has none. Two crews with different root scopes never merge.

A view is one owner's CrewAI record of a store record: its id, scope (and
the normalized path the filters use), categories, metadata, importance,
times, source and privacy, as the flat JSON object the store keeps per
(record, owner). An owner has one view of a record: a save of words it
already holds replaces its earlier one. Needs no CrewAI.
"""

from __future__ import annotations

import datetime
import json
from typing import Any, Mapping, Optional

__all__ = [
    "AGENT_SEGMENT",
    "OWNERS_KEY",
    "normal_path",
    "owner_and_scope",
    "under",
    "scope_clauses",
    "view_of",
    "fields_of",
]

#: The path segment CrewAI's executor puts before an agent's role.
AGENT_SEGMENT = "agent"

#: The key of a record's owners in the metadata the backend returns, present
#: when two or more agents hold the record (never stored).
OWNERS_KEY = "agentsensus.owners"


def normal_path(path: Optional[str]) -> str:
    """A scope path as ``/a/b``: one leading slash, no empty segment, no
    trailing slash; ``"/"`` for the root (and for ``None`` or ``""``)."""
    parts = [p for p in (path or "").split("/") if p]
    return "/" + "/".join(parts)


def owner_and_scope(
    path: Optional[str], source: Optional[str], default_owner: str, acting: Optional[str] = None
) -> tuple[str, str]:
    """(owner, store scope) of a record saved at ``path`` with ``source``:
    see the module's rule."""
    parts = [p for p in (path or "").split("/") if p]
    at = next((i for i, p in enumerate(parts[:-1]) if p == AGENT_SEGMENT), None)
    if at is None:
        owner = acting or source or default_owner
        return owner, "/" + "/".join(parts)
    return acting or parts[at + 1], "/" + "/".join(parts[:at])


def under(path: str, prefix: Optional[str]) -> bool:
    """Whether the scope ``path`` is ``prefix`` or below it, segment-wise
    (``/crew/a`` is not under ``/crew/ab``); every path is under ``None``
    and ``"/"``."""
    p = normal_path(prefix)
    q = normal_path(path)
    return p == "/" or q == p or q.startswith(p + "/")


def scope_clauses(prefix: Optional[str]) -> list[Optional[dict[str, Any]]]:
    """The recall ``where`` clauses whose union is the views `under`
    ``prefix``: ``[None]`` (no filter) for the root, else the path itself and
    the range of paths below it (``"0"`` is the character after ``"/"``)."""
    p = normal_path(prefix)
    if p == "/":
        return [None]
    return [{"path": p}, {"path": {"$gte": p + "/", "$lt": p + "0"}}]


def _iso(t: Any) -> str:
    if not isinstance(t, datetime.datetime):
        raise TypeError(f"a MemoryRecord time must be a datetime, got {type(t).__name__}")
    return t.isoformat()


def view_of(record: Any) -> dict[str, Any]:
    """The view of a CrewAI ``MemoryRecord`` (its fields but content and
    embedding). ``TypeError`` when the record's
    metadata or categories are not JSON (``json.dumps``' own message, as
    CrewAI's LanceDB storage raises it), before anything is written."""
    metadata = {k: v for k, v in dict(record.metadata or {}).items() if k != OWNERS_KEY}
    categories = list(record.categories or [])
    json.dumps(metadata)
    json.dumps(categories)
    return {
        "id": str(record.id),
        "scope": str(record.scope),
        "path": normal_path(record.scope),
        "categories": categories,
        "metadata": metadata,
        "importance": float(record.importance),
        "created_at": _iso(record.created_at),
        "last_accessed": _iso(record.last_accessed),
        "source": record.source,
        "private": bool(record.private),
    }


def fields_of(view: Mapping[str, Any]) -> dict[str, Any]:
    """The ``MemoryRecord`` keyword arguments a view holds (all but content
    and embedding)."""
    return {
        "id": str(view["id"]),
        "scope": view.get("scope", "/"),
        "categories": list(view.get("categories") or []),
        "metadata": dict(view.get("metadata") or {}),
        "importance": float(view.get("importance", 0.5)),
        "created_at": datetime.datetime.fromisoformat(view["created_at"]),
        "last_accessed": datetime.datetime.fromisoformat(view["last_accessed"]),
        "source": view.get("source"),
        "private": bool(view.get("private", False)),
    }
