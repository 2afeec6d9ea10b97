"""agentsensus side by side with what users would pick instead, and with the
limits of the parts it is built on, in one process and one run.

    python bench/compare.py                 # 100k records, about 15 min here
    python bench/compare.py --quick         # 2k records, a smoke run
    python bench/compare.py --n 1000000 --out bench/results/compare-1m.json
    python bench/compare.py --limits small-owners   # recall against a numpy scan of the owner's vectors
    python bench/compare.py --limits equal-recall   # 100k, each HNSW library at recall@5 >= 0.99
    python bench/compare.py --llm-cost              # LLM calls and tokens per write, against mem0 infer=True
    python bench/compare.py --only deposit --peers agentsensus,python-glue   # the write path alone

Peers (bench/peers/): agentsensus; what users would pick instead: the Python
glue (usearch + lmdb packages), Chroma embedded, LanceDB embedded, LangGraph's
InMemoryStore with an index, mem0 (infer=False, Qdrant local); and as limits
raw usearch, hnswlib and FAISS (HNSW at the engine's settings) and raw LMDB.
A peer whose package is not installed is left out with a line saying so
(the bench extra installs them all). Workloads: deposit with a
no-op judge (1 statement, 5 statements, deposit_many of 100), owner-scoped
recall k=5 with expansion at 0.1%, 1%, 10% and 100% owner selectivity (with
recall@5 against an exact owner-scoped scan), and open + first query after a
clean close. Peers run interleaved, call by call, so that a noisy machine
slows them alike. Prints medians, ratios to agentsensus and the quality bars
of docs/design.md; writes the same as JSON. ``--peers`` picks a subset.

It runs against the installed package (``pip install ".[bench]"``), as a
script from anywhere: Python puts this file's directory, bench/, first on
``sys.path``, which is how its sibling modules (datasets, peers, ...) import.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

# Sibling modules of bench/ (on sys.path because this file runs as a script).
import compare_report
import datasets
import numpy as np
import peers
from peers.base import DEPOSIT_WORKLOADS, OPEN, RECALL, Corpus, Peer

K = 5
HERE = os.path.dirname(os.path.abspath(__file__))
STATEMENTS = {"deposit_1": 1, "deposit_5": 5, "deposit_many_100": 100}


@dataclass(frozen=True)
class Reps:
    """Timed calls per peer and workload (one more, untimed, warms up)."""

    queries: int  # per selectivity
    deposit_1: int
    deposit_5: int
    deposit_many_100: int
    opens: int


FULL = Reps(queries=200, deposit_1=200, deposit_5=100, deposit_many_100=20, opens=5)
QUICK = Reps(queries=20, deposit_1=20, deposit_5=10, deposit_many_100=3, opens=3)


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(mem_kb / 2**20, 1),
        "python": platform.python_version(),
        "loadavg_start": os.getloadavg(),
    }


def versions() -> dict[str, str]:
    """Package versions (agentsensus from the imported module: it may run
    from a source snapshot rather than an installed wheel)."""
    from importlib.metadata import PackageNotFoundError, version

    import agentsensus

    out = {"agentsensus": f"{getattr(agentsensus, '__version__', '?')} ({os.path.dirname(agentsensus.__file__)})"}
    for pkg in ["usearch", "lmdb", "chromadb", "lancedb", "pyarrow", "langgraph", "mem0ai", "qdrant-client"] + [
        "hnswlib",
        "faiss-cpu",
        "numpy",
    ]:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "absent"
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# A peer that has spent this long in one workload (with at least one timed
# call) is timed no further there: the slowest peers take seconds per call
# (LangGraph's candidate search over every namespace, a round of 100 of them),
# and every other peer's samples are taken meanwhile. The sample count of
# each median is in the JSON and in the table.
BUDGET_S = 45.0


def _over_budget(spent: dict[str, float], got: list[float], name: str) -> bool:
    return spent.get(name, 0.0) > BUDGET_S and len(got) >= 1


def run_recall(ps: list[Peer], corpus: Corpus, reps: Reps, samples: dict, accuracy: dict) -> None:
    """Owner-scoped recall at every selectivity, scored against an exact scan.
    Queries are perturbed records (datasets.queries)."""
    queries = datasets.queries(corpus.vectors, reps.queries + 1, seed=1001)
    users = [p for p in ps if RECALL in p.workloads]
    for label, owner in datasets.SELECTIVITY.items():
        w = f"recall_{label}"
        owned = datasets.corpus_owned(corpus.n, owner)
        sims = queries @ corpus.vectors[owned].T
        top = np.argsort(-sims, axis=1)[:, :K]
        truth = [set(owned[row].tolist()) for row in top]
        samples[w] = {p.name: [] for p in users}
        accuracy[w] = {p.name: [] for p in users if p.kind != "limit"}
        t0 = time.perf_counter()
        spent: dict[str, float] = {}
        for qi in range(len(queries)):
            for p in _rotate(users, qi):
                if _over_budget(spent, samples[w][p.name], p.name):
                    continue
                dt, hits = timed(lambda: p.recall(owner, queries[qi], K))
                spent[p.name] = spent.get(p.name, 0.0) + dt
                if qi == 0:
                    continue  # warm-up
                samples[w][p.name].append(dt)
                if p.name in accuracy[w]:
                    accuracy[w][p.name].append(len(truth[qi] & set(hits)) / len(truth[qi]))
            datasets.progress(f"{w} ({len(owned):,} owned)", qi + 1, len(queries), t0)


def run_deposits(ps: list[Peer], dim: int, reps: Reps, samples: dict) -> None:
    """Fresh statements (no merges: the judge is never asked), the same ones
    for every peer, interleaved call by call."""
    users = [p for p in ps if set(DEPOSIT_WORKLOADS) <= p.workloads]
    for w in DEPOSIT_WORKLOADS:
        count = getattr(reps, w) + 1
        size = STATEMENTS[w]
        fresh = datasets.vectors(count * size, seed=2000 + size, dim=dim)
        samples[w] = {p.name: [] for p in users}
        t0 = time.perf_counter()
        spent: dict[str, float] = {}
        for r in range(count):
            vecs = fresh[r * size : (r + 1) * size]
            # One word each, found in no other text: no exact duplicate, and no
            # candidate by words either (the engine's lexical index).
            texts = [f"fresh{size}x{r}x{j}" for j in range(size)]
            for p in _rotate(users, r):
                if _over_budget(spent, samples[w][p.name], p.name):
                    continue
                if w == "deposit_many_100":  # a round: 100 agents, one statement each
                    items = [(f"a{j}", texts[j : j + 1], vecs[j : j + 1]) for j in range(size)]
                    dt, _ = timed(lambda: p.deposit_many(items))
                else:
                    dt, _ = timed(lambda: p.deposit(f"a{r % 100}", texts, vecs))
                spent[p.name] = spent.get(p.name, 0.0) + dt
                if r:
                    samples[w][p.name].append(dt)
            datasets.progress(w, r + 1, count, t0)


def run_open(ps: list[Peer], query: np.ndarray, reps: Reps, samples: dict) -> None:
    """Open after a clean close, until the first query is answered (so that
    lazy loading cannot hide in the open)."""
    users = [p for p in ps if OPEN in p.workloads]
    for p in ps:
        p.close()
    samples["open"] = {p.name: [] for p in users}
    t0 = time.perf_counter()
    for r in range(reps.opens + 1):
        for p in _rotate(users, r):

            def go() -> None:
                p.open()
                p.probe(query)

            dt, _ = timed(go)
            p.close()
            if r:
                samples["open"][p.name].append(dt)
        datasets.progress("open + first query", r + 1, reps.opens + 1, t0)


def _rotate(ps: list[Peer], i: int) -> list[Peer]:
    """Peers in a rotating order, so that none always runs first."""
    s = i % len(ps) if ps else 0
    return ps[s:] + ps[:s]


# The real limits, one script each; the arguments after the mode are theirs.
MODES: dict[str, str] = {
    "--limits small-owners": "small_owners",
    "--limits equal-recall": "equal_recall",
    "--llm-cost": "llm_cost",
}


def _mode(argv: list[str]) -> tuple[str, list[str]] | None:
    """The limits mode asked for (its module, its arguments), if any."""
    for flag, module in MODES.items():
        words = flag.split()
        if argv[: len(words)] == words:
            return module, argv[len(words) :]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    mode = _mode(argv)
    if mode is not None:
        # Its own process: each sets its BLAS threads before numpy loads.
        import subprocess

        return subprocess.call([sys.executable, os.path.join(HERE, mode[0] + ".py"), *mode[1]])
    if argv[:1] == ["--limits"]:
        sys.exit(f"compare.py: --limits takes one of {', '.join(f.split()[1] for f in MODES if ' ' in f)}")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=None, help="records in every store (default 100000; 2000 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a small smoke run: 2k records, few repetitions")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "compare.json"), help="JSON output path")
    ap.add_argument("--peers", default=",".join(peers.NAMES), help=f"comma-separated subset of {','.join(peers.NAMES)}")
    ap.add_argument(
        "--sync", action="store_true", help="fsync every commit (agentsensus, glue, lmdb); default off for all"
    )
    ap.add_argument(
        "--agentsensus-build",
        choices=["import", "deposit"],
        default="import",
        help="build the agentsensus store from the cached corpus store written through the import path "
        "(default) or by deposit_many",
    )
    ap.add_argument(
        "--only", choices=["recall", "deposit", "open"], default=None, help="run one family of workloads (default: all)"
    )
    ap.add_argument(
        "--workdir", default=None, help="where the stores are built (default: a temporary dir under bench/.data)"
    )
    args = ap.parse_args(argv)
    n = args.n or (2_000 if args.quick else 100_000)
    reps = QUICK if args.quick else FULL
    names = [s for s in args.peers.split(",") if s]
    unknown = set(names) - set(peers.NAMES)
    if unknown:
        ap.error(f"unknown peers: {', '.join(sorted(unknown))}")
    names.sort(key=lambda s: s != compare_report.ENGINE)  # the engine first: its column is the reference
    info = {"machine": machine(), "versions": versions(), "command": " ".join(sys.argv), "n": n, "dim": datasets.DIM}
    info.update(
        {"sync": args.sync, "k": K, "reps": asdict(reps), "peers": names, "agentsensus_build": args.agentsensus_build}
    )
    print(f"compare: {n:,} records, dim {datasets.DIM}, peers {', '.join(names)}", file=sys.stderr)

    os.makedirs(datasets.DATA, exist_ok=True)
    workdir = args.workdir or tempfile.mkdtemp(prefix="compare-", dir=datasets.DATA)
    corpus = Corpus(datasets.corpus(n, seed=0))
    ps: list[Peer] = []
    missing: dict[str, str] = {}
    for name in names:
        try:
            ps.append(peers.make(name, os.path.join(workdir, name), sync=args.sync, cache_dir=datasets.DATA))
        except peers.PeerMissing as e:
            missing[name] = str(e)
            print(f"not measured: {e}", file=sys.stderr)
    names = [p.name for p in ps]
    info["peers"], info["not_measured"] = names, missing
    for p in ps:
        if p.name == compare_report.ENGINE:
            p.build_via = args.agentsensus_build
    samples: dict[str, dict[str, list[float]]] = {}
    accuracy: dict[str, dict[str, list[float]]] = {}
    build_s: dict[str, float] = {}
    try:
        for p in list(ps):
            try:
                build_s[p.name], _ = timed(lambda: p.build(corpus, datasets.progress))
            except peers.PeerMissing as e:
                ps.remove(p)
                missing[p.name] = str(e)
                print(f"not measured: {e}", file=sys.stderr)
                continue
            print(f"built {p.name} in {build_s[p.name]:.1f}s", file=sys.stderr)
        names = [p.name for p in ps]
        info["peers"] = names
        if args.only in (None, "recall"):
            run_recall(ps, corpus, reps, samples, accuracy)
        if args.only in (None, "deposit"):
            run_deposits(ps, datasets.DIM, reps, samples)
        if args.only in (None, "open"):
            run_open(ps, datasets.vectors(1, seed=1001)[0], reps, samples)
    finally:
        for p in ps:
            try:
                p.close()
            except Exception:
                pass
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    table = compare_report.summarize(samples, accuracy, STATEMENTS)
    bar_list = compare_report.bars(table, n, {p.name: p.kind for p in ps})
    info["machine"]["loadavg_end"] = os.getloadavg()
    print("\nmedian ms per call (ratio = peer / agentsensus; above 1: agentsensus is faster)\n")
    print(compare_report.table_markdown(table, names, STATEMENTS))
    for why in missing.values():
        print(f"\nnot measured: {why}")
    print("\nquality bars (docs/design.md)\n")
    print(compare_report.bars_markdown(bar_list))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({**info, "build_s": build_s, "workloads": table, "bars": bar_list}, f, indent=1)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
