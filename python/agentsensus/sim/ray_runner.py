"""``agentsensus simulate --ray``: the simulation on a Ray cluster.

One run (``run_ray``) is the local ``run`` (runner.py), the same code path
with a `RayPlacement` (sim/placement.py), so its ``metrics.json``,
``report.html`` and ``events.jsonl`` are the local run's for the same
options, timings and the ``"ray"`` entry aside:

- every consensus store (the main run, the cache rows, the horizon
  re-runs, ``keep_names`` and the ``recall_off`` control) is one
  `agentsensus.ray.StoreActor` on the driver's node, its files in the
  run's scratch directory as locally; each run starts from a copy of its
  sediment made as the local run makes it (the store closed, copied,
  reopened), so the store's in-memory state (the deposit passes' learned
  guesses) starts where the local run's does;
- the baselines (generative_agents, g_memory, collaborative) and the
  ``merge_off`` control hold their rows in memory: they live in the driver;
- every run's agents decide in agent-group actors spread over the nodes,
  each running at most ``calls_per_node`` decisions at a time (a decision
  waits ``model_latency`` seconds first: a simulated model call); a consensus
  run's recalls go to its store actor in one ``recall_many`` a round, and
  its deposits in one keyed ``deposit_many``;
- the judge curve and the labelled pairs run in the driver.

The policy's choices depend only on (seed, agent, round) and the agent's
view, so where a decision runs changes nothing.

A sweep (``sweep``): every (world, seed) is a Ray task of its own with its own
store, running the local ``run``; the report (sweep.json, sweep.html)
aggregates them per world, mean ± sd over the seeds, with whiskers.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from .actions import Action
from .agent_policy import AgentView, Policy
from .backend import BACKENDS, MemoryGraph
from .consensus import ConsensusBackend, store_options
from .controls import CONTROLS
from .kernel import Kernel, RoundLog
from .progress import Progress
from .runner import run

__all__ = ["run_ray", "sweep", "connect", "parse_seeds", "RayPlacement", "SWEEP_METRICS"]


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
        """Some of the agents: decides for them with the current run's policy, ``cap`` decisions at a time."""

        def __init__(self, cap: int, latency: float) -> None:
            self.pool = ThreadPoolExecutor(max_workers=cap)
            self.latency = latency
            self.key: Any = None
            self.policy: Optional[Policy] = None

        def node(self) -> str:
            return str(ray.get_runtime_context().get_node_id())

        def adopt(self, key: Any, policy: Policy) -> None:
            # Runs go one after another: a group holds the policy of the run now stepping.
            self.key, self.policy = key, policy

        def _decide(self, agent: str, view: AgentView) -> Action:
            if self.latency:
                time.sleep(self.latency)  # the model call the policy would make
            assert self.policy is not None
            return self.policy.decide(agent, view)

        def decide_many(self, key: Any, pairs: list[tuple[str, AgentView]]) -> list[Action]:
            if key != self.key:
                raise RuntimeError(f"agent group holds the policy of run {self.key!r}, asked for run {key!r}")
            return list(self.pool.map(lambda p: self._decide(*p), pairs))

    return AgentGroup


# ---------------------------------------------------------------- the store


class RayConsensusBackend(ConsensusBackend):
    """The consensus backend over a `agentsensus.ray.RemoteStore`
    (merging on): every ``remember`` is one ``deposit_many`` under a batch
    key of its own, and ``recall_many`` asks for a whole round at once."""

    def __init__(
        self,
        store: Any,
        dim: int,
        judge: Any,
        run_key: str,
        merge_policy: str = "keep_shorter",
        opened: Optional[Callable[[], None]] = None,
    ) -> None:
        # Not ConsensusBackend.__init__: the store is already open, in its actor.
        self.path = Path(store.path)
        self.dim = dim
        self.judge = judge
        self.merging = True
        self.merge_policy = merge_policy
        self._kw = {}
        self.stores = {"": store}
        self.seen = set()
        self.run_key = run_key
        self._calls = 0
        self._forks = 0
        self._texts: dict[int, str] = {}  # filled by graph(), emptied by a deposit
        self._opened = opened  # told of every store actor a fork opens

    def remember(self, items: Sequence[Any], round: int, witnesses: Any = None) -> list[Any]:
        """One ``deposit_many`` in the actor, under a batch key no other call of this store's line uses."""
        self.seen.update(o for o, _, _ in items)
        self._texts = {}
        self._calls += 1
        key = f"{self.run_key}/round-{round}/{self._calls}"
        deps = self.stores[""].deposit_many([(o, list(s), v) for o, s, v in items], round=round, batch_key=key)
        return [([int(i) for i in d.ids], list(d.merged)) for d in deps]

    def recall_many(self, queries: Sequence[tuple[str, Any]], k: int) -> list[list[Any]]:
        """Every ``(owner, query)``'s recall, expansion on, in one actor call."""
        qs = [(o, np.asarray(q, dtype=np.float32)) for o, q in queries]
        return self.stores[""].recall_many(qs, k=k, expand=True)  # type: ignore[no-any-return]

    def graph(self) -> MemoryGraph:
        """As `ConsensusBackend.graph`, in a few actor calls (not one per record)."""
        store = self.stores[""]
        ids: set[int] = set()
        for owner in sorted(self.seen):
            try:
                ids.update(int(i) for i in store.owned(owner))
            except KeyError:  # an owner this store never saw
                pass
        order = sorted(ids)
        g = MemoryGraph()
        for rid, mem, nbs in zip(order, store.get_many(order), store.neighbors_many(order)):
            g.owners[rid] = frozenset(mem.owners)
            g.rounds[rid] = int(mem.round)
            self._texts[rid] = str(mem.text)
            for nb in nbs:
                g.link(rid, int(nb))
        return g

    def text_of(self, rid: int) -> str:
        """The text of record ``rid`` (from the last `graph` when no deposit came since)."""
        got = self._texts.get(rid)
        return got if got is not None else str(self.stores[""].get(rid).text)

    def fork(self, path: str | Path) -> "ConsensusBackend":
        """A copy of this store at ``path`` in an actor of its own on the same node, made as
        `ConsensusBackend.fork` makes it: the store closed, copied and reopened (both
        start afresh from the files, as locally), the judge's state copied."""
        import ray

        from agentsensus.ray import RemoteStore

        store = self.stores[""]
        judge = store.copy_to(os.fspath(path))  # pickled on the way back: a copy of the actor's judge
        node = ray.get(store.actor.info.remote())["node"]
        actor = _store_actor(os.fspath(path), self.dim, judge, self.merge_policy, node)
        self._forks += 1
        key = f"{self.run_key}/fork-{self._forks}"
        twin = RayConsensusBackend(RemoteStore(actor), self.dim, judge, key, self.merge_policy, self._opened)
        twin.seen = set(self.seen)
        if self._opened is not None:
            self._opened()
        return twin

    def close(self) -> None:
        """Closes the store and ends its actor; calling it again does nothing."""
        for store in self.stores.values():
            store.shutdown()
        self.stores = {}


def _store_actor(path: str, dim: int, judge: Any, merge_policy: str, node: str) -> Any:
    """A StoreActor at ``path`` opened with the local run's options, on node ``node``."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from agentsensus.ray import StoreActor

    on = NodeAffinitySchedulingStrategy(node, soft=False)  # its files are that node's
    opts = store_options(dim, judge, merge_policy=merge_policy)
    return StoreActor.options(scheduling_strategy=on).remote(path, **opts)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- the kernel


class RayKernel(Kernel):
    """The local kernel's round with the decisions spread over the agent
    groups, and a consensus store's recalls in one actor call (module docstring)."""

    _runs = itertools.count(1)

    def __init__(self, *args: Any, groups: Sequence[Any], **kw: Any) -> None:
        import ray

        super().__init__(*args, **kw)
        self.groups = list(groups)
        self.decide_seconds: list[float] = []  # per round: the policy's wall time over the groups
        # Every group decides with a copy of this run's policy, sent before its first round.
        self.key = next(RayKernel._runs)
        ray.get([g.adopt.remote(self.key, self.policy) for g in self.groups])

    def _group_of(self, agent: str) -> int:
        # Stable over processes and runs (not Python's salted hash).
        return zlib.crc32(agent.encode("utf-8")) % len(self.groups)

    def _recall_many(self, queries: list[tuple[str, str]], log: RoundLog) -> list[list[Any]]:
        # A store actor's recalls in one call; any other backend (recall_off too) recalls as locally.
        if not queries or type(self.backend) is not RayConsensusBackend:
            return super()._recall_many(queries, log)
        t0 = time.perf_counter()
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
        refs = {g: self.groups[g].decide_many.remote(self.key, [views[n] for n in ns]) for g, ns in parts.items()}
        out: list[Optional[Action]] = [None] * len(views)
        for g, ref in refs.items():
            for n, act in zip(parts[g], ray.get(ref)):
                out[n] = act
        self.decide_seconds.append(time.perf_counter() - t0)
        return [a for a in out if a is not None]


# ---------------------------------------------------------------- placement


class RayPlacement:
    """Where ``run`` puts things on the connected cluster (module docstring):
    consensus stores as StoreActors on the driver's node, rounds stepped by a
    `RayKernel` over ``groups`` agent-group actors."""

    def __init__(self, run_key: str, groups: int = 0, calls_per_node: int = 8, model_latency: float = 0.0) -> None:
        import ray

        self.nodes = sum(1 for n in ray.nodes() if n["Alive"])
        self.node = str(ray.get_runtime_context().get_node_id())
        self.run_key = run_key
        self.calls_per_node, self.model_latency = calls_per_node, model_latency
        Group = _group_class()
        self.groups = [Group.remote(calls_per_node, model_latency) for _ in range(groups or self.nodes)]
        self.placed = ray.get([g.node.remote() for g in self.groups])  # placed and up before any clock starts
        self.kernels: list[RayKernel] = []
        self.stores = 0
        self.backends: Sequence[str] = ()

    def consensus(self, path: Path, dim: int, judge: Any, merge_policy: str) -> RayConsensusBackend:
        """A consensus store at ``path`` in a StoreActor on the driver's node."""
        from agentsensus.ray import RemoteStore

        self._opened()
        actor = _store_actor(os.fspath(path), dim, judge, merge_policy, self.node)
        key = f"{self.run_key}/store-{self.stores}"
        return RayConsensusBackend(RemoteStore(actor), dim, judge, key, merge_policy, self._opened)

    def _opened(self) -> None:
        self.stores += 1

    def kernel(self, *args: Any, **kw: Any) -> RayKernel:
        """A `RayKernel` over this placement's agent groups."""
        k = RayKernel(*args, groups=self.groups, **kw)
        self.kernels.append(k)
        return k

    def round_seconds(self) -> list[float]:
        """The first run's (the first backend's main run) decision wall time per round."""
        return list(self.kernels[0].decide_seconds) if self.kernels else []

    def describe(self) -> dict[str, Any]:
        """The cluster, the groups and where each backend and control ran."""
        where: dict[str, str] = {}
        for b in self.backends:
            if b == "consensus":
                where[b] = "store actor on the driver's node"
                where.update({f"{c} (consensus)": "driver" if c == "merge_off" else where[b] for c in CONTROLS})
            else:
                where[b] = "driver"
        return {
            "nodes": self.nodes,
            "groups": len(self.groups),
            "group_nodes": len(set(self.placed)),
            "calls_per_node": self.calls_per_node,
            "model_latency": self.model_latency,
            "store_actors": self.stores,
            "runs": len(self.kernels),
            "memory": where,
            "decisions": "agent groups",
            "decide_seconds": [round(s, 4) for s in self.round_seconds()],
        }

    def close(self) -> None:
        """Ends the agent groups."""
        import ray

        for g in self.groups:
            ray.kill(g, no_restart=True)


# ---------------------------------------------------------------- one run


@dataclass
class RayRun:
    """A finished distributed run: its metrics (``run``'s, plus ``"ray"``)."""

    metrics: dict[str, Any]
    nodes: int


def run_ray(
    world: str = "hamlet",
    rounds: int = 40,
    *,
    groups: int = 0,
    calls_per_node: int = 8,
    model_latency: float = 0.0,
    **options: Any,
) -> RayRun:
    """The local ``run(world, rounds, **options)`` on the connected Ray
    cluster (module docstring): the same metrics and files, plus
    ``metrics["ray"]``. ``groups``: agent-group actors (0: one per alive
    node, each needing one CPU, so they spread one to a node). ``out``
    defaults to ``None`` here (no files)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if calls_per_node < 1:
        raise ValueError(f"calls_per_node must be at least 1, got {calls_per_node}")
    if model_latency < 0 or not math.isfinite(model_latency):
        raise ValueError(f"model_latency must be a finite number of seconds >= 0, got {model_latency}")
    options.setdefault("out", None)
    place = RayPlacement(f"seed-{options.get('seed', 0)}", groups, calls_per_node, model_latency)
    place.backends = list(options.get("backends", BACKENDS))
    try:
        metrics = run(world, rounds, placement=place, **options)
    finally:
        place.close()
    return RayRun(metrics, place.nodes)


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


def cli_sweep(args: Any) -> int:
    """``agentsensus simulate --ray ... --seeds/--worlds`` (simulate_cli parses the flags)."""
    worlds = [w.strip() for w in (args.worlds or args.world).split(",") if w.strip()]
    out = Path(args.out)
    with connect(args.ray, nodes=args.ray_nodes):
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
