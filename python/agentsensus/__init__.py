"""agentsensus: an embedded storage engine for the shared long-term memory of
many LLM agents living in one world.

The consensus store (`Store`) keeps one record per fact however many
agents witnessed it, with the witnesses as its owner set, affiliation edges
between statements of one deposit, and owner-scoped recall. The contract is
docs/reference/contract.md; the design behind it, docs/design.md.
"""

from __future__ import annotations

from . import embedders, judges, policies
from ._version import __version__
from .errors import ContentionError, CorruptStoreError, Error, StoreFullError, StoreMovedError

# Through the old module path: it is loaded before ``compact`` is bound to the
# function here, so a later ``import agentsensus.io.compact`` cannot rebind it.
from .io.compact import Compacted, compact
from .planfence.fence import Check, Fence, Link, Stale, StalePlanError
from .records import Change, Deposit, JudgeRequest, Memory, Merge, Stats, Supersedes
from .store import Store

__all__ = [
    "Store",
    "Memory",
    "Deposit",
    "Merge",
    "Stats",
    "Change",
    "JudgeRequest",
    "Supersedes",
    "Error",
    "CorruptStoreError",
    "StoreFullError",
    "StoreMovedError",
    "ContentionError",
    "Fence",
    "Link",
    "Stale",
    "Check",
    "StalePlanError",
    "compact",
    "Compacted",
    "judges",
    "embedders",
    "policies",
    "__version__",
]
