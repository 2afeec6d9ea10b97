"""Read paths of one store, timed for several builds of the engine side by
side: each build runs in its own process, rounds interleaved (ABC, CBA, ...),
medians printed with the ratio to the first build.

    python bench/read_cost.py STORE N [PKG_DIR ...] [--rounds R]

The first build is always the installed package (``pip install .``); each
PKG_DIR holds another build's ``agentsensus`` package (with its
``_core*.so``), put first on that child's ``PYTHONPATH`` to be compared with
it. STORE is a closed store of the clustered corpus with N records
(scale_stores.py). Used for the cost of LMDB's page checks in
docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROUNDS = 5
INSTALLED = "installed"


def measure(path: str, n: int) -> dict[str, float]:
    """One process's timings (seconds) of the read paths."""
    import numpy as np
    from agentsensus import Store

    # A sibling module of bench/, on sys.path because this file runs as a script.
    from datasets import corpus_queries

    qs = corpus_queries(n, 200, seed=3)
    out: dict[str, float] = {}
    with Store(path, create=False, readonly=True) as s:
        ids = np.random.default_rng(1).integers(1, n + 1, 2000)
        for owner in ("a7", "tenth", "all"):
            s.recall(owner, qs[0], k=5)
        t = time.perf_counter()
        for i in ids:
            s.get(int(i))
        out["get x2000"] = time.perf_counter() - t
        for owner in ("a7", "tenth", "all"):
            t = time.perf_counter()
            for q in qs:
                s.recall(owner, q, k=5)
            out[f"recall {owner} x200"] = time.perf_counter() - t
        t = time.perf_counter()
        sum(1 for _ in s.records())
        out["records()"] = time.perf_counter() - t
        t = time.perf_counter()
        for i in range(200):
            s.owned(f"a{i % 100}")
        out["owned x200"] = time.perf_counter() - t
    return out


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        import agentsensus._core

        # Where the engine came from, so that the parent can tell a PKG_DIR
        # that was not the one imported.
        print(json.dumps({"core": agentsensus._core.__file__, "times": measure(sys.argv[2], int(sys.argv[3]))}))
        return 0
    args = sys.argv[1:]
    rounds = ROUNDS
    if "--rounds" in args:
        at = args.index("--rounds")
        try:
            rounds = int(args[at + 1])
        except (IndexError, ValueError):
            rounds = 0
        del args[at : at + 2]
    if len(args) < 2 or rounds < 1:
        print(__doc__, file=sys.stderr)
        return 2
    path, n, builds = args[0], args[1], [INSTALLED, *args[2:]]
    runs: dict[str, list[dict[str, float]]] = {b: [] for b in builds}
    for r in range(rounds):
        for b in builds if r % 2 == 0 else builds[::-1]:
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)  # the installed package, unless a PKG_DIR is asked for
            if b != INSTALLED:
                env["PYTHONPATH"] = b
            done = subprocess.run(
                [sys.executable, __file__, "--child", path, n], capture_output=True, text=True, env=env, check=True
            )
            got = json.loads(done.stdout)
            # An editable install's import hook comes before PYTHONPATH: the
            # child would time the installed build under PKG_DIR's name.
            if b != INSTALLED and not os.path.realpath(got["core"]).startswith(os.path.realpath(b) + os.sep):
                print(
                    f"read_cost.py: {b} was not imported (the engine came from {got['core']}; an editable install "
                    "shadows PYTHONPATH: run this from a non-editable install)",
                    file=sys.stderr,
                )
                return 2
            runs[b].append(got["times"])
    first = builds[0]
    print("| read | " + " | ".join(builds) + " |")
    print("|---|" + "---|" * len(builds))
    for key in runs[first][0]:
        med = {b: statistics.median(x[key] for x in runs[b]) * 1000 for b in builds}
        cells = [f"{med[b]:.2f} ms" + ("" if b == first else f" (x{med[b] / med[first]:.2f})") for b in builds]
        print(f"| {key} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
