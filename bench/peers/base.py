"""The one interface every system in bench/compare.py is driven through."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

# (owner, statements, vectors): one deposit, as Store.deposit_many takes it.
DepositItem = tuple[str, Sequence[str], np.ndarray]

# progress(label, done, total, t0), as bench/datasets.progress.
Progress = Callable[[str, int, int, float], None]

# The workloads a peer may support (compare.py runs the intersection).
DEPOSIT_WORKLOADS = ("deposit_1", "deposit_5", "deposit_many_100")
RECALL = "recall"
OPEN = "open"


@dataclass(frozen=True)
class Corpus:
    """The records every peer loads: record i has text corpus_text(i), vector
    vectors[i] (unit, f32) and owner set corpus_owners(i); records of one block
    of corpus_blocks were deposited together (affiliation edges)."""

    vectors: np.ndarray

    @property
    def n(self) -> int:
        return len(self.vectors)


class Peer(ABC):
    """A system under comparison. Lifecycle: build -> workloads -> close ->
    (open -> probe -> close)*. Recall returns corpus indices of the hits so
    that every peer is scored against the same exact answer."""

    name: str = "?"
    kind: str = "peer"  # "engine" (agentsensus), "peer" (what users pick instead) or "limit"
    workloads: frozenset[str] = frozenset()

    def __init__(self, path: str, *, sync: bool = False) -> None:
        self.path = path
        self.sync = sync

    @abstractmethod
    def build(self, corpus: Corpus, progress: Progress) -> None:
        """Create the store at self.path holding corpus; leave it open."""

    def deposit(self, owner: str, statements: Sequence[str], vectors: np.ndarray) -> None:
        """One agent's deposit, judge excluded (a no-op judge)."""
        raise NotImplementedError

    def deposit_many(self, items: Sequence[DepositItem]) -> None:
        """A round of deposits; later items see earlier ones."""
        raise NotImplementedError

    def recall(self, owner: str, query: np.ndarray, k: int) -> list[int]:
        """Owner-scoped k nearest plus one-hop expansion; returns the hits'
        corpus indices (expansion rows are fetched but not returned)."""
        raise NotImplementedError

    @abstractmethod
    def close(self) -> None:
        """Close cleanly (persist whatever the next open needs)."""

    @abstractmethod
    def open(self) -> None:
        """Reopen the store at self.path after close."""

    @abstractmethod
    def probe(self, query: np.ndarray) -> None:
        """The cheapest read that proves the reopened store can answer."""
