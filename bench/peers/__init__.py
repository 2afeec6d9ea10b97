"""The systems bench/compare.py puts side by side, each behind peers.base.Peer.

Peer modules import their third-party packages at import time; _REGISTRY maps
a name to a loader so that compare.py imports only the peers it runs, and
make raises PeerMissing (with the package to install) for a peer whose
package is not installed, so that compare.py can leave it out and say so.
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
    "lancedb": ("lancedb_peer", "LanceDbPeer", False),
    "langgraph": ("langgraph_peer", "LangGraphPeer", False),
    "mem0": ("mem0_peer", "Mem0Peer", False),
    "usearch": ("raw_limits", "RawUsearchPeer", True),
    "hnswlib": ("ann_limits", "HnswlibPeer", True),
    "faiss": ("ann_limits", "FaissPeer", True),
    "lmdb": ("raw_limits", "RawLmdbPeer", False),
}

# The package each peer needs beyond the test extra's (pyproject.toml's bench extra pins them).
PACKAGES: dict[str, str] = {
    "chroma": "chromadb",
    "lancedb": "lancedb",
    "langgraph": "langgraph",
    "mem0": "mem0ai",
    "hnswlib": "hnswlib",
    "faiss": "faiss-cpu",
}


class PeerMissing(Exception):
    """A peer that this run cannot measure: its package is not installed,
    or (raised by its build) not at this size; the message says why."""


NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make(name: str, path: str, *, sync: bool, cache_dir: str) -> Peer:
    """Instantiate peer `name` storing at `path`."""
    module, cls, wants_cache = _REGISTRY[name]
    try:
        factory: Callable[..., Peer] = getattr(importlib.import_module(f".{module}", __name__), cls)
        return factory(path, sync=sync, cache_dir=cache_dir) if wants_cache else factory(path, sync=sync)
    except ModuleNotFoundError as e:
        raise PeerMissing(
            f"{name}: not installed ({e.name} missing: pip install {PACKAGES.get(name, e.name)})"
        ) from None
