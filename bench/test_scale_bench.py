"""The engine at 10k, 100k and 1M records: owner-scoped recall at every
selectivity (with recall@5 against an exact owner-scoped scan), open after a
clean and after an unclean close, and peak memory.

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
