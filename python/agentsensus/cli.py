"""The ``agentsensus`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Optional, Sequence

__all__ = ["main"]


def _stats(args: argparse.Namespace) -> int:
    from .store import Store

    with Store(args.path, create=False, readonly=True) as s:
        st = asdict(s.stats())
    if args.json:
        print(json.dumps(st))
    else:
        for k, v in st.items():
            print(f"{k:>11}  {v}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from .store import Store

    with Store(args.path, create=False, readonly=not args.repair) as s:
        problems = s.verify()
        if problems and args.repair:
            print(f"{len(problems)} problem(s) found; repairing", file=sys.stderr)
            s.repair()
            problems = s.verify()
    if args.json:
        print(json.dumps({"sound": not problems, "problems": problems}))
    elif problems:
        for p in problems:
            print(p)
    else:
        print("ok")
    return 1 if problems else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``agentsensus`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "simulate":
        from .sim import cli_main

        return cli_main(argv[1:])
    p = argparse.ArgumentParser(prog="agentsensus", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("simulate", help="run the story-world simulation and write a report")
    st = sub.add_parser("stats", help="print a store's counts")
    st.add_argument("path")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(fn=_stats)
    ck = sub.add_parser("check", help="verify a store's invariants; exit 0 when sound, 1 when not")
    ck.add_argument("path")
    ck.add_argument("--repair", action="store_true", help="rebuild the index and derived tables from the records")
    ck.add_argument("--json", action="store_true", help="print JSON")
    ck.set_defaults(fn=_check)
    args = p.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
