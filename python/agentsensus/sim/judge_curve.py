"""The judge measured per variation level: round-0 merge precision and recall.

The main run sediments the play at one variation level. How good the judge
is depends on how differently witnesses word one event, so the curve
sediments the same source into a fresh consensus store at several levels
(0: exact quotations, 1: the most varied, with indirect speech) and scores
each sediment's merges against provenance, exactly as the main run's
sediment is scored (`Ledger`).

Sedimenting the whole of Hamlet at three levels takes about 22 s of CPU, so
the curve sediments a fixed prefix of the source, the first `STEPS`
source steps (Hamlet has 679: about half of it, 10 s of CPU for the three
levels), at every level; each entry says so in ``"scope"``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from .consensus import ConsensusBackend
from .kernel import Kernel
from .memory_policy import MemoryPolicy
from .sediment import SourceReplay
from .sim_embedder import CachedEmbedder
from .variation import Variation
from .world import World

__all__ = ["judge_curve", "LEVELS", "STEPS"]

#: The variation levels the curve sediments at.
LEVELS = (0.0, 0.5, 1.0)
#: Source steps sedimented per level (``None``: the whole source).
STEPS = 320


def judge_curve(
    replay: SourceReplay,
    world: World,
    embed: CachedEmbedder,
    judge_factory: Callable[[], Any],
    *,
    levels: Sequence[float] = LEVELS,
    seed: int = 0,
    timestamps: bool = False,
    steps: int | None = STEPS,
    on_level: Callable[[dict[str, Any], Kernel], None] | None = None,
) -> list[dict[str, Any]]:
    """The judge's round-0 precision and recall at each of ``levels``.

    ``replay`` is the play's replayed source (`replay_source`)
    and ``world`` the world it was replayed in (forked per level, never
    changed). Each level sediments the first ``steps`` source steps (all of
    them for ``None``) into a fresh `ConsensusBackend`
    judged by ``judge_factory()``, through `sediment`,
    with accounts worded by ``Variation(level, seed, timestamps=timestamps)``.

    Returns one entry per level: ``variation``, ``precision``, ``recall``
    (``None`` when undefined), ``merges``, ``statements``, ``records``,
    ``timestamps`` and ``scope``. ``on_level(entry, kernel)``, when given, is
    called with each entry and the kernel right after its sediment, before
    the store is closed, so a caller can add figures of its own to the entry.
    """
    if not levels:
        raise ValueError("levels must not be empty")
    bad = [lv for lv in levels if not 0.0 <= float(lv) <= 1.0]
    if bad:
        raise ValueError(f"variation levels must be in [0, 1], got {bad}")
    if steps is not None and steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    batches = replay.batches if steps is None else replay.batches[:steps]
    scope = "whole source" if steps is None or steps >= len(replay.batches) else f"first {len(batches)} steps"
    out: list[dict[str, Any]] = []
    root = Path(tempfile.mkdtemp(prefix="agentsensus-judge-curve-"))
    try:
        for i, level in enumerate(levels):
            backend = ConsensusBackend(root / f"level-{i}", embed.dim, judge=judge_factory())
            try:
                kernel = Kernel(
                    world.fork(),
                    MemoryPolicy(seed),
                    backend,
                    embed,
                    variation=Variation(float(level), seed, timestamps=timestamps),
                )
                log = kernel.sediment(batches)
                score = kernel.ledger.score
                entry: dict[str, Any] = {
                    "variation": float(level),
                    "precision": score.precision,
                    "recall": score.recall,
                    "merges": score.merges,
                    "statements": log.statements,
                    "records": log.records,
                    "timestamps": timestamps,
                    "scope": scope,
                }
                if on_level is not None:
                    on_level(entry, kernel)
                out.append(entry)
            finally:
                backend.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out
