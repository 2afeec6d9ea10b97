"""The systems bench/compare.py puts side by side, each behind peers.base.Peer.

Peer modules import their third-party packages at import time; PEERS maps a
name to a loader so that compare.py imports only the peers it runs.
"""

from __future__ import annotations

import importlib
from typing import Callable

from .base import Peer

# name -> (module, class, whether it takes the shared usearch cache_dir)
_REGISTRY: dict[str, tuple[str, str, bool]] = {
    "agentsensus": ("agentsensus_peer", "AgentsensusPeer", False),
    "python-glue": ("python_glue", "PythonGluePeer", True),
    "chroma": ("chroma_peer", "ChromaPeer", False),
    "usearch": ("raw_limits", "RawUsearchPeer", True),
    "lmdb": ("raw_limits", "RawLmdbPeer", False),
}

NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make(name: str, path: str, *, sync: bool, cache_dir: str) -> Peer:
    """Instantiate peer `name` storing at `path`."""
    module, cls, wants_cache = _REGISTRY[name]
    factory: Callable[..., Peer] = getattr(importlib.import_module(f".{module}", __name__), cls)
    return factory(path, sync=sync, cache_dir=cache_dir) if wants_cache else factory(path, sync=sync)
