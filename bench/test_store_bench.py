"""Deposit and recall on a 100k-record store, dim 384, judge excluded.

    pytest bench/test_store_bench.py --benchmark-only
    AGENTSENSUS_BENCH_N=2000 pytest bench/test_store_bench.py --benchmark-disable   # a smoke run

The store (the clustered corpus of datasets.py, written through the import
path by scale_stores.py) is built once into bench/.data/ (about a minute
here) and copied for the deposit benchmarks; recall queries are perturbed
records. It runs against the installed package; its sibling modules
(datasets, scale_stores) import because pytest puts bench/, a directory
without ``__init__.py``, on ``sys.path``.
"""

from __future__ import annotations

import itertools
import os

import pytest
from agentsensus import Store, judges
from datasets import copy_of, corpus, queries, vectors
from scale_stores import corpus_store

N = int(os.environ.get("AGENTSENSUS_BENCH_N", "100000"))


@pytest.fixture(scope="module")
def base(request) -> str:
    # Show the build's progress bar through pytest's output capture.
    capman = request.config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        return corpus_store(N)


@pytest.fixture
def writable(base, tmp_path):
    s = Store(copy_of(base, os.fspath(tmp_path / "s")), judge=judges.never)
    yield s
    s.close()


def test_deposit_many_round_of_100(benchmark, writable):
    fresh = vectors(100 * 200, seed=99)
    rounds = itertools.count()

    def one_round():
        r = next(rounds)
        items = [(f"a{j}", [f"new {r} {j}"], fresh[r * 100 + j : r * 100 + j + 1]) for j in range(100)]
        writable.deposit_many(items, round=r)

    benchmark.pedantic(one_round, rounds=30, iterations=1, warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable (the smoke run): nothing was timed
        benchmark.extra_info["statements_per_second"] = 100 / benchmark.stats.stats.median


def test_deposit_single_statement(benchmark, writable):
    fresh = vectors(500, seed=98)
    n = itertools.count()

    def one():
        i = next(n)
        writable.deposit("a1", [f"single {i}"], fresh[i : i + 1])

    benchmark.pedantic(one, rounds=200, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("owner", ["a7", "tenth", "all"], ids=["1pct", "10pct", "100pct"])
def test_recall_k5_expand(benchmark, base, owner):
    qs = queries(corpus(N), 1000, seed=97)
    n = itertools.count()
    with Store(base, readonly=True) as s:
        benchmark(lambda: s.recall(owner, qs[next(n) % 1000], k=5))


@pytest.mark.parametrize("batched", [False, True], ids=["one_by_one", "recall_many"])
def test_recall_256_agents_k5_expand(benchmark, base, batched):
    # A simulation's round: the 100 depositing agents (1% owners each) recall in turn.
    qs = queries(corpus(N), 256, seed=96)
    pairs = [(f"a{i % 100}", q) for i, q in enumerate(qs)]
    with Store(base, readonly=True) as s:
        if batched:
            benchmark(lambda: s.recall_many(pairs, k=5))
        else:
            benchmark(lambda: [s.recall(o, q, k=5) for o, q in pairs])
        if benchmark.stats is not None:
            benchmark.extra_info["recalls_per_second"] = 256 / benchmark.stats.stats.median
