"""Concurrency: several writer processes on one store against one, and
recall from several threads of one process against one thread.

    python bench/concurrency.py                      # 10k-record store, 4 writers, 2 threads
    python bench/concurrency.py --n 100000 --statements 4000
    python bench/concurrency.py --quick              # a smoke run

Both halves use a copy of the cached corpus store (scale_stores.py) whose
vector index this build rebuilt (the cache keeps the one the build that
made it wrote). Writers: a fresh copy of that per run; each run
deposits the same total of fresh statements (plain Gaussian unit vectors, no
merge fires) with the no-op judge, split evenly over P processes that each
open the store and start together; statements/s is the total over the wall
time from the first start to the last finish. One process and P processes
alternate (``--rounds`` of each, on a fresh copy every time) so that a noisy
machine slows both alike; medians are printed with the ratio. Each writer
also counts its own CPU time, so the run says what an idle machine would
allow whatever the load: one writer keeps one core busy, P writers at most
min(P, cores), so the ratio is bounded by min(P, cores) x CPU per statement
of one / CPU per statement of P (every process keeps its own HNSW graph and
inserts every writer's records into it). Afterwards every acknowledged
statement is checked to be in the store (nothing lost).

Readers: one open store, the same queries split over T threads of one
process (the engine releases the GIL in recall, but for an owner whose
last recall's engine work was shorter than the GIL hand-over is worth:
``--keep-gil-ns``), QPS against one thread,
per owner selectivity, interleaved the same way. Beside it, the share of a
one-thread recall's wall time that holds the GIL (the engine counts the
time it runs with the GIL released) and the ratio that share allows:
1 / share, at most T and the cores; and the cores the process used (CPU
seconds per wall second). Wall-clock shares: on a loaded machine,
preemption inflates both parts, and where the kernel groups CPU time by
session (/proc/sys/kernel/sched_autogroup_enabled) T threads get no more
cores than one while other sessions keep the cores busy.

It runs against the installed package; its sibling modules (datasets,
scale_stores) import because Python puts this file's directory first on
``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

import datasets
import numpy as np
from agentsensus import Store, _core, judges
from scale_stores import corpus_store

K = 5


# -- writers -------------------------------------------------------------------


def _writer(path: str, owner: str, seed: int, deposits: int, size: int, sync: bool, start: Any, out: Any) -> None:
    """One writer process: open, wait for the others, deposit, report what
    was acknowledged (text and record id of every statement)."""
    try:
        vecs = datasets.vectors(deposits * size, seed=seed)
        with Store(path, judge=judges.never, sync=sync) as s:
            start.wait()
            c0 = os.times()
            t0 = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
            acked: list[tuple[str, int]] = []
            for d in range(deposits):
                # one word each, in no other text: neither vectors nor words make a candidate
                texts = [f"{owner}x{d}x{j}" for j in range(size)]
                got = s.deposit(owner, texts, vecs[d * size : (d + 1) * size])
                acked.extend(zip(texts, got.ids))
            t1 = time.perf_counter()
            c1 = os.times()
        cpu = c1.user - c0.user + c1.system - c0.system  # this process's threads, whatever the machine's load
        out.put((owner, t0, t1, acked, None, cpu))
    except BaseException as e:  # reported, so the parent never waits forever
        out.put((owner, 0.0, 0.0, [], f"{type(e).__name__}: {e}", 0.0))


def run_writers(base: str, workdir: str, procs: int, total: int, size: int, sync: bool, tag: str) -> dict[str, Any]:
    """total statements in deposits of size, over procs processes, into a
    fresh copy of base. Returns statements/s and the acknowledged count."""
    path = os.path.join(workdir, f"writers-{procs}-{tag}")
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path, ignore=shutil.ignore_patterns("ready"))
    ctx = mp.get_context("spawn")  # LMDB forbids using an environment across fork
    start, out = ctx.Event(), ctx.Queue()
    per = total // size // procs
    ps = [
        ctx.Process(target=_writer, args=(path, f"w{i}", 5000 + 97 * i + 13 * procs, per, size, sync, start, out))
        for i in range(procs)
    ]
    for p in ps:
        p.start()
    time.sleep(0.5)  # let every process finish opening before the start
    start.set()
    results = [out.get(timeout=1800) for _ in ps]
    for p in ps:
        p.join(60)
    errors = [r[4] for r in results if r[4]]
    if errors:
        raise RuntimeError(f"a writer failed: {errors[0]}")
    t0 = min(r[1] for r in results)
    t1 = max(r[2] for r in results)
    acked = [a for r in results for a in r[3]]
    lost = check_acked(path, acked)
    shutil.rmtree(path, ignore_errors=True)
    cpu_ms = sum(r[5] for r in results) / len(acked) * 1e3
    return {
        "statements": len(acked),
        "seconds": t1 - t0,
        "statements_per_s": len(acked) / (t1 - t0),
        "cpu_ms_per_statement": cpu_ms,
        "cores_used": sum(r[5] for r in results) / (t1 - t0),
        "lost": lost,
    }


def check_acked(path: str, acked: list[tuple[str, int]]) -> int:
    """How many acknowledged statements are not in the store under their id."""
    lost = 0
    with Store(path, readonly=True) as s:
        for text, rid in acked:
            try:
                if s.get(rid).text != text:
                    lost += 1
            except KeyError:
                lost += 1
    return lost


# -- readers -------------------------------------------------------------------


def run_readers(s: Store, owner: str, qs: np.ndarray, threads: int) -> tuple[float, float, float]:
    """(QPS, share of the wall time spent with the GIL released, cores the
    process used) of len(qs) recalls split over threads. The share is the engine's own count
    of its GIL-released time (``_core.recall_nogil_ns``, per thread) over
    each thread's wall time; one thread's is what bounds T threads:
    whatever holds the GIL runs one thread at a time, so T threads reach at
    most 1 / (1 - share) times one thread's QPS (and at most T, and at most
    the cores)."""
    parts = np.array_split(np.arange(len(qs)), threads)
    gate = threading.Barrier(threads + 1)
    spans: list[tuple[float, float, int]] = []

    def work(idx: np.ndarray) -> None:
        gate.wait()
        g0 = _core.recall_nogil_ns()
        t0 = time.perf_counter()
        for i in idx:
            s.recall(owner, qs[i], k=K)
        t1 = time.perf_counter()
        spans.append((t0, t1, _core.recall_nogil_ns() - g0))

    ts = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    gate.wait()
    c0 = os.times()
    for t in ts:
        t.join()
    c1 = os.times()
    wall = max(b for _, b, _ in spans) - min(a for a, _, _ in spans)
    released = sum(g for _, _, g in spans) / 1e9 / sum(b - a for a, b, _ in spans)
    # CPU seconds per wall second: below the thread count when the
    # scheduler gave the process fewer cores (a loaded machine).
    cores = (c1.user - c0.user + c1.system - c0.system) / wall
    return len(qs) / wall, released, cores


# -- main ----------------------------------------------------------------------


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=None, help="records in the store (default 10000; 2000 with --quick)")
    ap.add_argument("--quick", action="store_true", help="a small smoke run")
    ap.add_argument("--writers", type=int, default=4, help="writer processes set against one (default 4)")
    ap.add_argument("--threads", type=int, default=2, help="recall threads set against one (default 2)")
    ap.add_argument("--statements", type=int, default=None, help="statements per writer run (default 2000)")
    ap.add_argument("--size", type=int, default=1, help="statements per deposit (default 1)")
    ap.add_argument("--queries", type=int, default=None, help="recalls per reader run and selectivity (default 2000)")
    ap.add_argument("--rounds", type=int, default=None, help="runs of each configuration (default 3)")
    ap.add_argument("--sync", action="store_true", help="fsync every commit (default off)")
    ap.add_argument("--skip", choices=["writers", "readers"], default=None, help="leave one half out")
    ap.add_argument(
        "--keep-gil-ns",
        type=int,
        default=None,
        help="a recall whose engine work took under this many ns last time keeps the GIL "
        "(_core.recall_keep_gil_ns; default the engine's, 0: every recall releases it)",
    )
    ap.add_argument(
        "--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "concurrency.json")
    )
    args = ap.parse_args(argv)
    n = args.n or (2_000 if args.quick else 10_000)
    total = args.statements or (80 if args.quick else 2_000)
    queries = args.queries or (40 if args.quick else 2_000)
    rounds = args.rounds or (1 if args.quick else 3)
    if args.writers < 2 or args.threads < 2 or args.size < 1 or total < args.writers * args.size:
        ap.error("--writers and --threads must be at least 2, --statements at least writers x size")
    if args.keep_gil_ns is not None and args.keep_gil_ns < 0:
        ap.error("--keep-gil-ns must be at least 0")
    engine_default = _core.recall_keep_gil_ns(0)
    args.keep_gil_ns = engine_default if args.keep_gil_ns is None else args.keep_gil_ns
    _core.recall_keep_gil_ns(args.keep_gil_ns)
    os.makedirs(datasets.DATA, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="concurrency-", dir=datasets.DATA)
    try:
        return run(args, n, total, queries, rounds, current_index_copy(corpus_store(n), workdir), workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def current_index_copy(cached: str, workdir: str) -> str:
    """A copy of the cached corpus store with its vector index rebuilt by
    the installed build: the cache keeps the index file of the build that
    made it (an f32 graph, say, where today's store keeps int8), and every
    insertion and search would then cost what that build's cost."""
    path = os.path.join(workdir, "base")
    shutil.copytree(cached, path, ignore=shutil.ignore_patterns("ready", "index.usearch"))
    t0 = time.perf_counter()
    Store(path).close()  # a writable open rebuilds the missing index; close saves it
    print(f"rebuilt the index of a copy in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return path


def run(args: argparse.Namespace, n: int, total: int, queries: int, rounds: int, base: str, workdir: str) -> int:
    report: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "n": n,
        "nproc": os.cpu_count(),
        "keep_gil_ns": args.keep_gil_ns,
        "loadavg_start": load(),
        "sync": args.sync,
    }
    print(f"concurrency: {n:,}-record store, dim {datasets.DIM}, load average {load()}", file=sys.stderr)

    if args.skip != "writers":
        runs: dict[int, list[dict[str, Any]]] = {1: [], args.writers: []}
        t0 = time.perf_counter()
        for r in range(rounds):
            for procs in [1, args.writers] if r % 2 == 0 else [args.writers, 1]:
                runs[procs].append(run_writers(base, workdir, procs, total, args.size, args.sync, str(r)))
            datasets.progress("writer runs", r + 1, rounds, t0)
        med = {p: statistics.median(x["statements_per_s"] for x in rs) for p, rs in runs.items()}
        cpu = {p: statistics.median(x["cpu_ms_per_statement"] for x in rs) for p, rs in runs.items()}
        report["writers"] = {
            "size": args.size,
            "statements": total,
            "runs": {str(p): rs for p, rs in runs.items()},
            "median_statements_per_s": {str(p): m for p, m in med.items()},
            "ratio": med[args.writers] / med[1],
            "median_cpu_ms_per_statement": {str(p): c for p, c in cpu.items()},
            # What an idle machine allows: one writer keeps one core busy, P
            # writers at most min(P, cores), each statement costing cpu[P].
            "cpu_bound_ratio": min(args.writers, os.cpu_count() or 1) * cpu[1] / cpu[args.writers],
            "lost": sum(x["lost"] for rs in runs.values() for x in rs),
        }

    if args.skip != "readers":
        qs = datasets.corpus_queries(n, queries, seed=1001)
        readers: dict[str, Any] = {}
        with Store(base, readonly=True) as s:
            for label, owner in datasets.SELECTIVITY.items():
                for q in qs[:20]:
                    s.recall(owner, q, k=K)  # warm the pages this owner's recalls touch
                qps: dict[int, list[float]] = {1: [], args.threads: []}
                cores: dict[int, list[float]] = {1: [], args.threads: []}
                released: list[float] = []
                for r in range(rounds):
                    for t in [1, args.threads] if r % 2 == 0 else [args.threads, 1]:
                        got, share, used = run_readers(s, owner, qs, t)
                        qps[t].append(got)
                        cores[t].append(used)
                        if t == 1:
                            released.append(share)
                m = {t: statistics.median(v) for t, v in qps.items()}
                held = 1.0 - statistics.median(released)
                bound = min(float(args.threads), float(os.cpu_count() or 1), 1.0 / held if held > 0 else float("inf"))
                readers[label] = {
                    "qps": {str(t): v for t, v in qps.items()},
                    "ratio": m[args.threads] / m[1],
                    "us_per_recall": 1e6 / m[1],
                    "gil_held_share": held,
                    "gil_bound_ratio": bound,
                    "median_cores_used": {str(t): statistics.median(v) for t, v in cores.items()},
                }
                print(
                    f"recall {label}: {m[1]:,.0f} QPS, {args.threads} threads {m[args.threads]:,.0f}; "
                    f"GIL held {held:.0%} of a recall's {1e6 / m[1]:.0f} us (bound {bound:.2f}x)",
                    file=sys.stderr,
                )
        report["readers"] = {"threads": args.threads, "queries": queries, "by_selectivity": readers}

    report["loadavg_end"] = load()
    print()
    print(table(report, args.writers, args.threads))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"\nwrote {args.out}", file=sys.stderr)
    lost = report.get("writers", {}).get("lost", 0)
    if lost:
        print(f"LOST {lost} acknowledged statements", file=sys.stderr)
        return 1
    return 0


def table(report: dict[str, Any], writers: int, threads: int) -> str:
    lines = ["| what | one | many | ratio | bar |", "|---|---|---|---|---|"]
    w = report.get("writers")
    if w:
        m = w["median_statements_per_s"]
        lines.append(
            f"| deposit of {w['size']} statement(s), {writers} processes, statements/s "
            f"| {m['1']:,.0f} | {m[str(writers)]:,.0f} | {w['ratio']:.2f}x | >= 0.80x |"
        )
        c = w["median_cpu_ms_per_statement"]
        lines.append(
            f"| CPU ms per statement (all writers' threads) | {c['1']:.2f} | {c[str(writers)]:.2f} "
            f"| {w['cpu_bound_ratio']:.2f}x on {report['nproc']} idle cores | >= 0.80x |"
        )
        u = {p: statistics.median(x["cores_used"] for x in rs) for p, rs in w["runs"].items()}
        lines.append(f"| cores the writers used | {u['1']:.2f} | {u[str(writers)]:.2f} | | |")
    for label, r in report.get("readers", {}).get("by_selectivity", {}).items():
        one, many = statistics.median(r["qps"]["1"]), statistics.median(r["qps"][str(threads)])
        lines.append(
            f"| recall {label} owner, {threads} threads, QPS | {one:,.0f} | {many:,.0f} | {r['ratio']:.2f}x | >= 1.80x |"
        )
        c = r["median_cores_used"]
        lines.append(
            f"| recall {label} owner, GIL held, share of one thread's {r['us_per_recall']:.0f} us; cores used "
            f"| {r['gil_held_share']:.0%}; {c['1']:.2f} | {c[str(threads)]:.2f} | {r['gil_bound_ratio']:.2f}x bound | |"
        )
    lines.append(f"\nload average {report['loadavg_start']} -> {report['loadavg_end']}; {report['nproc']} cores")
    if report.get("readers"):
        lines.append(f"recalls whose engine work took under {report['keep_gil_ns']:,} ns last time keep the GIL")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
