"""Planfence: derivation currency for plans built on other owners' values.

`fence` holds the API (``Store.fence``); the HTTP transport of heads is
the `transport` module, imported only by whoever serves or fetches heads
(it needs the ``aiohttp`` extra), so nothing here imports it."""

from __future__ import annotations

from .fence import Check, Fence, Link, Stale, StalePlanError, UnknownKeyError, value_digest
from .memory_links import MEMORY_OWNER, memory_key

__all__ = [
    "Fence",
    "Link",
    "Stale",
    "Check",
    "StalePlanError",
    "UnknownKeyError",
    "value_digest",
    "memory_key",
    "MEMORY_OWNER",
]
