"""``Placement``: where a simulation's runs go (``run(placement=...)``).

The local run opens its consensus stores in this process and steps its
kernels here. A placement (the Ray one: `.ray_runner`) opens the
consensus stores elsewhere and steps the rounds with a kernel of its own,
while ``run`` keeps everything else, so the distributed run is the local
run's code path and gives its metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from .backend import MemoryBackend
from .kernel import Kernel

__all__ = ["Placement"]


class Placement(Protocol):
    """Where the consensus stores live and the rounds are stepped."""

    def consensus(self, path: Path, dim: int, judge: Any, merge_policy: str) -> MemoryBackend:
        """A consensus store (merging on) at ``path``, judged by ``judge``."""
        ...

    def kernel(self, *args: Any, **kw: Any) -> Kernel:
        """A kernel for a run's rounds, built with `Kernel`'s arguments."""
        ...

    def describe(self) -> dict[str, Any]:
        """What ``metrics.json`` says about where the runs went (its ``"ray"`` entry)."""
        ...
