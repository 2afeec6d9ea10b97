"""The crash soak: many SIGKILL trials of the crash harness (tests/crash).

Each trial starts a writer (deposits, deposit_many rounds, forgets, Planfence
publishes and derives, reopens) on a fresh store, kills it with SIGKILL after
a random time, reopens the store and checks every acknowledged operation,
the in-flight one (all or nothing), Store.verify() and recall.

    python bench/crash_soak.py --trials 120 --out crash_soak.json

It runs against the installed package (``pip install ".[bench]"``) from a
checkout of the repository: the harness itself is tests/crash.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict

# The harness, not the package: tests/crash/trial.py (agentsensus itself is
# the installed one).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "crash"))

from trial import run_trial  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=120)
    p.add_argument("--seed", type=int, default=1000, help="seed of the first trial; trial i uses seed + i")
    p.add_argument("--max-ops", type=int, default=400, help="most acknowledged operations before a kill")
    p.add_argument("--out", help="write the per-trial results and totals as JSON here")
    args = p.parse_args()
    results, failures = [], []
    start = time.time()
    for i in range(args.trials):
        seed = args.seed + i
        with tempfile.TemporaryDirectory(prefix="crash-soak-") as d:
            try:
                r = run_trial(d, seed, max_ops=args.max_ops)
                results.append(asdict(r))
                print(
                    f"trial {i + 1}/{args.trials} seed {seed}: {r.acknowledged} acknowledged ops verified"
                    f"{', one in flight' if r.in_flight else ''}",
                    flush=True,
                )
            except AssertionError as e:
                failures.append({"seed": seed, "error": str(e)})
                print(f"trial {i + 1}/{args.trials} seed {seed}: FAILED\n{e}", flush=True)
    totals = {
        "trials": args.trials,
        "survived": len(results),
        "failed": len(failures),
        "operations_verified": sum(r["acknowledged"] for r in results),
        "killed_with_an_operation_in_flight": sum(r["in_flight"] for r in results),
        "seconds": round(time.time() - start, 1),
    }
    print(json.dumps(totals))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"totals": totals, "failures": failures, "trials": results}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
