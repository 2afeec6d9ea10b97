"""The engine at 10k, 100k and 1M records: owner-scoped recall at every
selectivity (with recall@5 against an exact owner-scoped scan), open after a
clean and after an unclean close, peak memory, and concurrency (4 writer
processes against 1, 2 recall threads against 1).

    pytest bench/test_scale_bench.py --benchmark-only
    AGENTSENSUS_BENCH_SIZES=10000,100000 pytest bench/test_scale_bench.py --benchmark-only

The stores are built once into bench/.data/ (scale_stores.py; the 1M one
takes several minutes here) and never written to: the unclean-close case
works on a copy. It runs against the installed package; its sibling modules
(datasets, scale_stores) import because pytest puts bench/, a directory
without ``__init__.py``, on ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from agentsensus import Store
from datasets import DATA, KINDS, SCALE_SELECTIVITY, corpus_owned, corpus_queries, exact_top
from scale_stores import corpus_store

HERE = os.path.dirname(os.path.abspath(__file__))

SIZES = [int(x) for x in os.environ.get("AGENTSENSUS_BENCH_SIZES", "10000,100000,1000000").split(",")]
# AGENTSENSUS_BENCH_KIND=hard: the near-tie corpus (datasets.KINDS).
KIND = os.environ.get("AGENTSENSUS_BENCH_KIND", "clustered")
assert KIND in KINDS, f"AGENTSENSUS_BENCH_KIND must be one of {', '.join(KINDS)}"
QUERIES = 200
K = 5


@pytest.fixture(scope="module", params=SIZES, ids=lambda n: f"{n // 1000}k")
def store(request) -> tuple[int, str]:
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():  # the build's progress bar
        return request.param, corpus_store(request.param, kind=KIND)


@pytest.mark.parametrize("share", list(SCALE_SELECTIVITY), ids=[s.replace("%", "pct") for s in SCALE_SELECTIVITY])
def test_recall_k5_expand(benchmark, store, share):
    n, path = store
    owner = SCALE_SELECTIVITY[share]
    qs = corpus_queries(n, QUERIES, seed=97, kind=KIND)
    truth = exact_top(n, owner, qs, K, kind=KIND)
    with Store(path, create=False, readonly=True) as s:
        got = [{m.id for m in s.recall(owner, q, k=K) if m.via == "hit"} for q in qs]
        calls = iter(range(10**9))
        benchmark.pedantic(
            lambda: s.recall(owner, qs[next(calls) % QUERIES], k=K), rounds=QUERIES, iterations=1, warmup_rounds=5
        )
    benchmark.extra_info["recall_at_5"] = float(np.mean([len(g & t) / K for g, t in zip(got, truth)]))
    benchmark.extra_info["owned"] = int(len(corpus_owned(n, owner)))


def _open_and_recall(path: str, q: np.ndarray) -> None:
    with Store(path, create=False, readonly=True) as s:
        s.recall("a7", q, k=K)


def test_open_after_clean_close(benchmark, store):
    """Open until the first recall is answered, so lazy loading cannot hide."""
    n, path = store
    q = corpus_queries(n, 1, seed=5, kind=KIND)[0]
    benchmark.pedantic(_open_and_recall, args=(path, q), rounds=7, iterations=1, warmup_rounds=1)


def _killed_writer(path: str) -> None:
    """A writer that deposits a round, then dies by SIGKILL before it can
    save the index: the next open finds the index file behind the journal."""
    code = f"""
import sys
import numpy as np
from agentsensus import Store, judges
rng = np.random.default_rng({time.time_ns() % 2**32})
v = rng.standard_normal((100, 384)).astype(np.float32)
s = Store({path!r}, judge=judges.never, create=False)
s.deposit_many([(f"a{{j % 100}}", [f"late {{rng.integers(1 << 62)}} {{j}}"], v[j:j + 1]) for j in range(100)])
print("written", flush=True)
sys.stdin.readline()
"""
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "written"
    p.send_signal(signal.SIGKILL)
    p.wait()


def test_open_after_unclean_close(benchmark, store):
    """A copy of the store, written by a process killed before close: open
    maps the saved index, finds it behind the journal, loads it and adds what
    the killed writer committed."""
    n, path = store
    copy = os.path.join(DATA, f"unclean-{n}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    q = corpus_queries(n, 1, seed=5, kind=KIND)[0]
    try:
        benchmark.pedantic(_open_and_recall, args=(copy, q), setup=lambda: _killed_writer(copy), rounds=3, iterations=1)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def test_peak_memory(benchmark, store):
    """Peak resident set of a process that opens the store, recalls 200
    times at every selectivity and closes: the index pages it maps count."""
    n, path = store
    code = f"""
import resource, sys, json
from agentsensus import Store
from datasets import corpus_queries
from datasets import SCALE_SELECTIVITY
qs = corpus_queries({n}, 200, seed=11, kind={KIND!r})
with Store({path!r}, create=False, readonly=True) as s:
    for owner in SCALE_SELECTIVITY.values():
        for q in qs:
            s.recall(owner, q, k=5)
print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""
    out: dict[str, int] = {}

    def run() -> None:
        # Run in bench/: ``python -c`` puts the working directory on sys.path,
        # which is how the child finds the sibling datasets module.
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=HERE)
        out["kib"] = int(done.stdout.strip())

    benchmark.pedantic(run, rounds=1, iterations=1)
    files = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    benchmark.extra_info["peak_rss_mib"] = round(out["kib"] / 1024, 1)
    benchmark.extra_info["store_files_mib"] = round(files / 2**20, 1)


# Concurrency at each size, through bench/concurrency.py's runners (that
# script is the full run: rounds, CPU accounting, the table).
WRITER_STATEMENTS = 400


def test_writers_four_against_one(benchmark, store):
    """4 writer processes depositing single statements into a copy of the
    store against 1 process (the same total); the benchmark times the 4,
    extra_info holds both rates, their ratio (bar >= 0.8x) and the lost."""
    import tempfile

    import concurrency

    n, path = store
    workdir = tempfile.mkdtemp(prefix="writers-", dir=DATA)
    out: dict = {}
    try:
        out["one"] = concurrency.run_writers(path, workdir, 1, WRITER_STATEMENTS, 1, False, "one")
        benchmark.pedantic(
            lambda: out.__setitem__(
                "four", concurrency.run_writers(path, workdir, 4, WRITER_STATEMENTS, 1, False, "four")
            ),
            rounds=1,
            iterations=1,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    one, four = out["one"]["statements_per_s"], out["four"]["statements_per_s"]
    benchmark.extra_info.update(
        statements_per_s_one=round(one, 1),
        statements_per_s_four=round(four, 1),
        ratio=round(four / one, 3),
        load=os.getloadavg()[0],
    )
    assert out["one"]["lost"] == 0 and out["four"]["lost"] == 0, "an acknowledged statement is missing"


@pytest.mark.parametrize("share", list(SCALE_SELECTIVITY), ids=[s.replace("%", "pct") for s in SCALE_SELECTIVITY])
def test_recall_two_threads(benchmark, store, share):
    """The same recalls split over 2 threads of one process against 1
    thread; the benchmark times the 2-thread run, extra_info holds both QPS
    and their ratio (bar >= 1.8x)."""
    import concurrency

    n, path = store
    owner = SCALE_SELECTIVITY[share]
    qs = corpus_queries(n, 2 * QUERIES, seed=1001, kind=KIND)
    runs: dict[str, tuple[float, ...]] = {}  # (QPS, share of the wall time with the GIL released, cores used)
    with Store(path, create=False, readonly=True) as s:
        for q in qs[:20]:
            s.recall(owner, q, k=K)  # warm the pages this owner's recalls touch
        runs["one"] = concurrency.run_readers(s, owner, qs, 1)
        benchmark.pedantic(
            lambda: runs.__setitem__("two", concurrency.run_readers(s, owner, qs, 2)), rounds=1, iterations=1
        )
    one, released = runs["one"][:2]
    two, cores = runs["two"][0], runs["two"][2]
    benchmark.extra_info.update(
        qps_one=round(one),
        qps_two=round(two),
        ratio=round(two / one, 3),
        gil_released_share=round(released, 3),
        cores_two=round(cores, 2),
    )
