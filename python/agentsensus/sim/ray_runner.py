"""``agentsensus simulate --ray``: the simulation on a Ray cluster.

One run (``run_ray``): the consensus store is a `agentsensus.ray.StoreActor`
and the agents decide in agent-group actors spread over the nodes. Each round:

- one ``recall_many`` for everyone whose decision lacks something (one actor call);
- the policy steps in the groups, every group at once, each running at most
  ``calls_per_node`` decisions at a time (a decision waits ``model_latency``
  seconds first: a simulated model call);
- the barrier (the world applies every action, as in the local kernel);
- one ``deposit_many`` under the round's batch key (exactly once).

The round is the local kernel's (kernel.py) step for step, and the policy's
choices depend only on (seed, agent, round) and the agent's view, so for the
same seed the results equal the local run's (``run`` with the consensus
backend only and no extra runs).

A sweep (``sweep``): every (world, seed) is a Ray task of its own with its own
store, running the local ``run``; the report (sweep.json, sweep.html)
aggregates them per world, mean ± sd over the seeds, with whiskers.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from .account_judge import AccountJudge
from .actions import Action
from .agent_policy import AgentView, Policy
from .consensus import ConsensusBackend, store_options
from .goals import seek_lists
from .kernel import Kernel, RoundLog
from .memory_policy import MemoryPolicy
from .metrics import People, backend_metrics, name_loss
from .plays import load_play
from .progress import Progress
from .sediment import replay_source
from .sim_embedder import get_embedder
from .variation import Variation
from .world import World

__all__ = ["run_ray", "sweep", "connect", "parse_seeds", "SWEEP_METRICS"]


# ---------------------------------------------------------------- the cluster


@contextmanager
def connect(address: str, *, nodes: int = 2, num_cpus: int = 1) -> Iterator[None]:
    """A Ray driver for the run: ``address`` ``"local"`` starts a local
    cluster of ``nodes`` nodes on 127.0.0.1 (token authentication on) and
    stops it after; any other address joins that cluster (its token comes
    from the environment, see docs/scale.md) and leaves it after."""
    import ray

    if address == "local":
        from agentsensus.ray import local_cluster

        with local_cluster([{} for _ in range(nodes)], num_cpus=num_cpus):
            yield
        return
    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _group_class() -> Any:
    import ray

    @ray.remote(num_cpus=1, max_restarts=1)
    class AgentGroup:
        """Some of the agents: decides for them, ``cap`` decisions at a time."""

        def __init__(self, policy: Callable[[], Policy], cap: int, latency: float) -> None:
            self.policy = policy()
            self.pool = ThreadPoolExecutor(max_workers=cap)
            self.latency = latency

        def node(self) -> str:
            return str(ray.get_runtime_context().get_node_id())

        def _decide(self, agent: str, view: AgentView) -> Action:
            if self.latency:
                time.sleep(self.latency)  # the model call the policy would make
            return self.policy.decide(agent, view)

        def decide_many(self, pairs: list[tuple[str, AgentView]]) -> list[Action]:
            return list(self.pool.map(lambda p: self._decide(*p), pairs))

    return AgentGroup


# ---------------------------------------------------------------- the store


class RayConsensusBackend(ConsensusBackend):
    """The consensus backend over a `agentsensus.ray.RemoteStore`
    (merging on): every ``remember`` is one ``deposit_many`` under a batch
    key of its own, and ``recall_many`` asks for a whole round at once."""

    def __init__(self, store: Any, dim: int, judge: Any, run_key: str) -> None:
        # Not ConsensusBackend.__init__: the store is already open, in its actor.
        self.path = Path(store.path)
        self.dim = dim
        self.judge = judge
        self.merging = True
        self.merge_policy = "keep_shorter"
        self._kw = {}
        self.stores = {"": store}
        self.seen = set()
        self.run_key = run_key
        self._calls = 0

    def remember(self, items: Sequence[Any], round: int, witnesses: Any = None) -> list[Any]:
        self.seen.update(o for o, _, _ in items)
        self._calls += 1
        key = f"{self.run_key}/round-{round}/{self._calls}"
        deps = self.stores[""].deposit_many([(o, list(s), v) for o, s, v in items], round=round, batch_key=key)
        return [([int(i) for i in d.ids], list(d.merged)) for d in deps]

    def recall_many(self, queries: Sequence[tuple[str, Any]], k: int) -> list[list[Any]]:
        qs = [(o, np.asarray(q, dtype=np.float32)) for o, q in queries]
        return self.stores[""].recall_many(qs, k=k, expand=True)  # type: ignore[no-any-return]

    def fork(self, path: str | Path) -> "ConsensusBackend":
        raise NotImplementedError("a store actor's backend runs in place")

    def close(self) -> None:
        self.stores[""].shutdown()


# ---------------------------------------------------------------- the kernel


class RayKernel(Kernel):
    """The local kernel's round with the recall, the policy and the deposit
    spread over the cluster (module docstring)."""

    def __init__(self, *args: Any, groups: Sequence[Any], **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.groups = list(groups)
        self.decide_seconds: list[float] = []  # per round: the policy's wall time over the groups

    def _group_of(self, agent: str) -> int:
        # Stable over processes and runs (not Python's salted hash).
        import zlib

        return zlib.crc32(agent.encode("utf-8")) % len(self.groups)

    def _recall_many(self, queries: list[tuple[str, str]], log: RoundLog) -> list[list[Any]]:
        # As Kernel._recall_many, the round's recalls in one call to the store actor.
        if not queries:
            return []
        t0 = time.perf_counter()
        assert isinstance(self.backend, RayConsensusBackend)
        found = self.backend.recall_many(
            list(zip([a for a, _ in queries], self.embed([t for _, t in queries]))), self.k
        )
        ms = (time.perf_counter() - t0) * 1000.0
        for mems in found:
            self._count(mems, log, ms / len(queries))
        return [list(m) for m in found]

    def _decide(self, views: list[tuple[str, AgentView]]) -> list[Action]:
        """Every view's action, in the order of ``views``: one call per group, all at once."""
        import ray

        parts: dict[int, list[int]] = {}
        for n, (agent, _) in enumerate(views):
            parts.setdefault(self._group_of(agent), []).append(n)
        t0 = time.perf_counter()
        refs = {g: self.groups[g].decide_many.remote([views[n] for n in ns]) for g, ns in parts.items()}
        out: list[Optional[Action]] = [None] * len(views)
        for g, ref in refs.items():
            for n, act in zip(parts[g], ray.get(ref)):
                out[n] = act
        self.decide_seconds.append(time.perf_counter() - t0)
        return [a for a in out if a is not None]


# ---------------------------------------------------------------- one run


@dataclass
class RayRun:
    """A finished distributed run: its metrics and per-round wall times."""

    metrics: dict[str, Any]
    round_seconds: list[float]
    decide_seconds: list[float]
    nodes: int


def _appear(world: World) -> set[str]:
    out: set[str] = set()
    for ev in world.events:
        out.update(ev.witnesses)
        out.update(ev.actors)
    return out


def run_ray(
    world: str = "hamlet",
    rounds: int = 40,
    *,
    seed: int = 0,
    variation: float = 0.5,
    embedder: str = "hash",
    cache_policy: str = "hybrid",
    groups: int = 0,
    calls_per_node: int = 8,
    model_latency: float = 0.0,
    policy: Optional[Callable[[], Policy]] = None,
    progress: bool = True,
) -> RayRun:
    """One run of the consensus backend on the connected Ray cluster (module
    docstring). ``groups``: agent-group actors (0: one per alive node, each
    needing one CPU, so they spread one to a node). Returns the consensus
    metrics in ``run``'s layout (``metrics["backends"]["consensus"]``)."""
    import ray

    from agentsensus.ray import RemoteStore, StoreActor

    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if calls_per_node < 1:
        raise ValueError(f"calls_per_node must be at least 1, got {calls_per_node}")
    if model_latency < 0 or not math.isfinite(model_latency):
        raise ValueError(f"model_latency must be a finite number of seconds >= 0, got {model_latency}")
    nodes = sum(1 for n in ray.nodes() if n["Alive"])
    groups = groups or nodes
    var = Variation(variation, seed)
    play = load_play(world)
    embed = get_embedder(embedder)
    judge = AccountJudge(use_scores=embed.name == "minilm")
    make_policy = policy if policy is not None else _SeededPolicy(seed)
    base = World.of(play.title, play.cast, play.places)
    replay = replay_source(play, base)
    source_events = len(base.events)
    replay.place_survivors(base)
    tmp = Path(tempfile.mkdtemp(prefix="agentsensus-ray-sim-"))
    # The local run's options, so that the distributed run is the same run.
    actor = StoreActor.remote(os.fspath(tmp / "consensus"), **store_options(embed.dim, judge))  # type: ignore[attr-defined]
    backend = RayConsensusBackend(RemoteStore(actor), embed.dim, judge, f"{play.title}/seed-{seed}")
    Group = _group_class()
    pool = [Group.remote(make_policy, calls_per_node, model_latency) for _ in range(groups)]
    try:
        placed = ray.get([g.node.remote() for g in pool])  # placed and up before the clock starts
        t0 = time.perf_counter()
        sed_world = base.fork()
        sed_kernel = Kernel(sed_world, make_policy(), backend, embed, variation=var)
        bar = Progress("consensus (ray) sediment", len(replay.batches), enabled=progress)
        sed_log = sed_kernel.sediment(replay.batches, on_batch=lambda n: bar.update(n, "source steps"))
        bar.close(f"{sed_log.records:,} entries from {sed_log.statements:,} statements")
        sed_seconds = time.perf_counter() - t0
        # As runner._Runner.run: a fresh kernel on a fork of the sedimented world and ledger.
        run_world, ledger = sed_world.fork(), sed_kernel.ledger.fork()
        kernel = RayKernel(
            run_world,
            make_policy(),
            backend,
            embed,
            cache_policy=cache_policy,
            variation=var,
            ledger=ledger,
            groups=pool,
        )
        kernel.logs.append(sed_log)
        kernel.start_after_source()
        kernel.set_goals(seek_lists(run_world, run_world.events[:source_events]))
        bar = Progress(f"consensus (ray) {rounds} rounds", rounds, enabled=progress)
        round_seconds: list[float] = []
        t1 = time.perf_counter()
        last = [t1]

        def on_round(log: RoundLog) -> None:
            now = time.perf_counter()
            round_seconds.append(now - last[0])
            last[0] = now
            bar.update(log.round, f"{log.records:,} entries")

        kernel.run(rounds, on_round)
        seconds = time.perf_counter() - t1
        bar.close(f"{kernel.logs[-1].records:,} entries" + (f" ({kernel.stopped})" if kernel.stopped else ""))
        people = People(play.cast)
        appear = _appear(run_world)
        m = backend_metrics(
            kernel.logs, backend.graph(), backend.stats(), ledger, appear, people, sed_seconds + seconds
        )
        m["judge"] = {
            "precision": ledger.score.precision,
            "recall": ledger.score.recall,
            "merges": ledger.score.merges,
            "sim_precision": ledger.sim_score.precision,
            "sim_recall": ledger.sim_score.recall,
            "sim_merges": ledger.sim_score.merges,
        }
        m["merge_cost"] = {"keep_shorter": name_loss(backend.merge_log(), people, ledger)}
        m["name_loss"] = {k: v["fraction"] for k, v in m["merge_cost"].items()}  # as runner's consensus extras
        metrics = {
            "world": play.title,
            "rounds": kernel.logs[-1].round,
            "seed": seed,
            "variation": var.strength,
            "source_events": source_events,
            "agents": len(appear),
            "events": len(run_world.events) - source_events,
            "stopped": kernel.stopped,
            "nodes": nodes,
            "groups": groups,
            "group_nodes": len(set(placed)),
            "calls_per_node": calls_per_node,
            "model_latency": model_latency,
            "backends": {"consensus": m},
            "seconds": round(sed_seconds + seconds, 2),
        }
        return RayRun(metrics, round_seconds, kernel.decide_seconds, nodes)
    finally:
        for g in pool:
            ray.kill(g, no_restart=True)
        try:
            backend.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class _SeededPolicy:
    """``() -> MemoryPolicy(seed)``, picklable (it travels to the groups)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def __call__(self) -> Policy:
        return MemoryPolicy(self.seed)


# ---------------------------------------------------------------- sweeps

#: What a sweep aggregates, from each run's consensus metrics (name, path).
SWEEP_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entries", ("total",)),
    ("sim entries", ("sim",)),
    ("sim shared %", ("sim_shared_pct",)),
    ("shared %", ("shared_pct",)),
    ("judge precision", ("judge", "precision")),
    ("judge recall", ("judge", "recall")),
)


def parse_seeds(text: str) -> list[int]:
    """``"1-8"``, ``"3"`` or ``"1,4,9-11"`` -> the seeds, in order, each once."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or not (hi.isdigit() or not _) or (hi and int(hi) < int(lo)):
            raise ValueError(f"--seeds: {part!r} is not a seed or a range like 1-8")
        got = list(range(int(lo), int(hi or lo) + 1))
        out.extend(s for s in got if s not in out)
    if not out:
        raise ValueError("--seeds: no seed given")
    if len(out) > 10_000:
        raise ValueError(f"--seeds: {len(out)} seeds; at most 10000")
    return out


def _one_run(world: str, seed: int, rounds: int, variation: float, embedder: str) -> dict[str, Any]:
    from .runner import run

    return run(
        world=world,
        rounds=rounds,
        backends=["consensus"],
        embedder=embedder,
        out=None,
        ablation=False,
        cache_rows=False,
        keep_names=False,
        horizon=(),
        seed=seed,
        variation=variation,
        progress=False,
    )


def _pick(m: dict[str, Any], path: tuple[str, ...]) -> Optional[float]:
    v: Any = m
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def aggregate(runs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per world: n, and per metric of `SWEEP_METRICS` the mean, sd
    (sample; 0 for one run), min and max over its seeds."""
    out: dict[str, dict[str, Any]] = {}
    for world in dict.fromkeys(r["world"] for r in runs):
        mine = [r for r in runs if r["world"] == world]
        row: dict[str, Any] = {"runs": len(mine), "seeds": [r["seed"] for r in mine]}
        for name, path in SWEEP_METRICS:
            xs = [x for x in (_pick(r["backends"]["consensus"], path) for r in mine) if x is not None]
            if xs:
                sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
                row[name] = {"mean": statistics.fmean(xs), "sd": sd, "min": min(xs), "max": max(xs)}
        out[world] = row
    return out


def sweep(
    worlds: Sequence[str],
    seeds: Sequence[int],
    *,
    rounds: int,
    variation: float = 0.5,
    embedder: str = "hash",
    progress: bool = True,
) -> dict[str, Any]:
    """Every (world, seed) as a parallel Ray task with its own store; the
    runs' metrics and their aggregate (`aggregate`)."""
    import ray

    task = ray.remote(num_cpus=1)(_one_run)
    jobs = [(w, s) for w in worlds for s in seeds]
    refs = {task.remote(w, s, rounds, variation, embedder): (w, s) for w, s in jobs}
    bar = Progress("sweep", len(jobs), enabled=progress)
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    pending = list(refs)
    t0 = time.perf_counter()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        runs[refs[done[0]]] = ray.get(done[0])
        bar.update(len(runs), f"{refs[done[0]][0]} seed {refs[done[0]][1]}")
    bar.close(f"{len(runs)} runs")
    ordered = [runs[j] for j in jobs]
    return {
        "worlds": list(worlds),
        "seeds": list(seeds),
        "rounds": rounds,
        "seconds": round(time.perf_counter() - t0, 2),
        "runs": ordered,
        "summary": aggregate(ordered),
    }


def summary_table(result: dict[str, Any]) -> str:
    """The sweep's summary as a plain-text table: mean ± sd per metric and world."""
    names = [n for n, _ in SWEEP_METRICS]
    head = f"{'world':<24} {'runs':>4} " + " ".join(f"{n:>22}" for n in names)
    lines = [head]
    for world, row in result["summary"].items():
        cells = []
        for n in names:
            c = row.get(n)
            cells.append(f"{'-':>22}" if c is None else f"{c['mean']:>12.3f} ± {c['sd']:<7.3f}")
        lines.append(f"{world[:24]:<24} {row['runs']:>4} " + " ".join(cells))
    return "\n".join(lines)


def whisker_chart(result: dict[str, Any], metric: str, *, width: int = 480, height: int = 260) -> str:
    """One bar per world: the mean of ``metric`` over its seeds, with a
    whisker of ± one sd and the runs' min and max as ticks (an SVG element)."""
    from html import escape

    from .svg import PALETTE

    rows = [(w, r[metric]) for w, r in result["summary"].items() if metric in r]
    left, top, bottom, right = 60, 24, 40, 16
    pw, ph = width - left - right, height - top - bottom
    ymax = max((c["max"] for _, c in rows), default=1.0)
    ymax = max(1.0, ymax * 1.1) if ymax > 0 else 1.0

    def y(v: float) -> float:
        return top + ph - ph * v / ymax

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(metric)}" font-family="system-ui, sans-serif" font-size="12">',
        f'<text x="{left}" y="16">{escape(metric)}: mean ± sd over seeds (ticks: min, max)</text>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
        f'<text x="{left - 6}" y="{y(ymax) + 4:.1f}" text-anchor="end">{ymax:.3g}</text>',
        f'<text x="{left - 6}" y="{top + ph + 4}" text-anchor="end">0</text>',
    ]
    gw = pw / max(len(rows), 1)
    for i, (world, c) in enumerate(rows):
        cx = left + gw * (i + 0.5)
        lo, hi = max(0.0, c["mean"] - c["sd"]), c["mean"] + c["sd"]
        out += [
            f'<rect x="{cx - gw * 0.3:.1f}" y="{y(c["mean"]):.1f}" width="{gw * 0.6:.1f}" '
            f'height="{top + ph - y(c["mean"]):.1f}" fill="{PALETTE[i % len(PALETTE)]}"/>',
            f'<line x1="{cx:.1f}" y1="{y(lo):.1f}" x2="{cx:.1f}" y2="{y(hi):.1f}" stroke="#000" stroke-width="1.5"/>',
        ]
        for v in (lo, hi):
            out.append(f'<line x1="{cx - 6:.1f}" y1="{y(v):.1f}" x2="{cx + 6:.1f}" y2="{y(v):.1f}" stroke="#000"/>')
        for v in (c["min"], c["max"]):
            out.append(f'<circle cx="{cx:.1f}" cy="{y(v):.1f}" r="2.5" fill="#000"/>')
        out.append(f'<text x="{cx:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(world[:28])}</text>')
    out.append("</svg>")
    return "\n".join(out)


def sweep_html(result: dict[str, Any]) -> str:
    """The sweep's report: the summary table and one whisker chart per metric."""
    from html import escape

    charts = "\n".join(whisker_chart(result, name) for name, _ in SWEEP_METRICS)
    return (
        "<!doctype html><meta charset='utf-8'><title>agentsensus sweep</title>"
        f"<h1>Sweep: {len(result['runs'])} runs, {result['rounds']} rounds each</h1>"
        f"<pre>{escape(summary_table(result))}</pre>\n{charts}\n"
    )


def cli_run(args: Any) -> int:
    """``agentsensus simulate --ray ...`` (simulate_cli parses the flags)."""
    worlds = [w.strip() for w in (args.worlds or args.world).split(",") if w.strip()]
    out = Path(args.out)
    with connect(args.ray, nodes=args.ray_nodes):
        if args.seeds is not None or len(worlds) > 1:
            seeds = parse_seeds(args.seeds) if args.seeds is not None else [args.seed]
            result = sweep(
                worlds,
                seeds,
                rounds=args.rounds,
                variation=args.variation,
                embedder=args.embedder,
                progress=not args.quiet,
            )
            out.mkdir(parents=True, exist_ok=True)
            (out / "sweep.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            (out / "sweep.html").write_text(sweep_html(result), encoding="utf-8")
            if not args.quiet:
                print(summary_table(result))
                print(f"wrote {out / 'sweep.json'} and {out / 'sweep.html'}", file=sys.stderr)
            return 0
        run = run_ray(
            worlds[0],
            args.rounds,
            seed=args.seed,
            variation=args.variation,
            embedder=args.embedder,
            cache_policy=args.cache,
            calls_per_node=args.calls_per_node,
            model_latency=args.model_latency,
            progress=not args.quiet,
        )
    out.mkdir(parents=True, exist_ok=True)
    metrics = dict(run.metrics, round_seconds=[round(s, 4) for s in run.round_seconds])
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    if not args.quiet:
        m = run.metrics["backends"]["consensus"]
        rs = sorted(run.round_seconds)
        med = rs[len(rs) // 2] if rs else 0.0
        print(
            f"{run.metrics['world']}: {run.metrics['rounds']} rounds on {run.nodes} nodes "
            f"({run.metrics['groups']} agent groups): {m['total']:,} entries, {m['sim_shared_pct']:.1f}% of sim "
            f"entries shared; median round {med:.2f} s"
        )
        print(f"wrote {out / 'metrics.json'}", file=sys.stderr)
    return 0
