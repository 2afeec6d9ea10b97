"""Read transactions reuse idle LMDB handles (reset, then renewed): a reused
handle must read the newest commit, of this process or another, including
after another process has grown the map."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, unit

pytestmark = pytest.mark.slow  # writer processes

HERE = os.path.dirname(__file__)


def spawn(code: str, **kw) -> subprocess.Popen:
    prelude = f"import sys\nsys.path[:0] = {sys.path!r}\n"
    return subprocess.Popen([sys.executable, "-c", prelude + code], cwd=HERE, **kw)


def test_each_read_sees_the_commit_another_process_just_made(store_path):
    Store(store_path, dim=DIM).close()
    # The writer deposits one record per line it is sent, and answers when it
    # has committed; between its commits this process reads, so each read
    # after the first runs on a handle an earlier read left idle.
    writer = spawn(
        f"""
from agentsensus import Store
from helpers import unit
with Store({store_path!r}) as s:
    for i, line in enumerate(sys.stdin):
        s.deposit("w", [f"fact {{i}}"], unit(i)[None])
        print("done", flush=True)
""",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        with Store(store_path) as s:
            for i in range(12):
                assert s.stats().records == i
                writer.stdin.write("go\n")
                writer.stdin.flush()
                assert writer.stdout.readline().strip() == "done"
                assert s.stats().records == i + 1
                assert s.recall("w", unit(i), k=1)[0].text == f"fact {i}"
        writer.stdin.close()
        assert writer.wait(60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_reads_after_another_process_grew_the_map(store_path):
    with Store(store_path, dim=DIM, map_size=1 << 20) as s:
        s.deposit("a", ["first"], unit(0)[None])
        assert s.recall("a", unit(0), k=1)[0].text == "first"  # leaves a handle idle
        # about 3.6 MB into a 1 MiB map: the other process grows it
        grower = spawn(
            f"""
from agentsensus import Store
from helpers import unit
big = "x" * 60_000
with Store({store_path!r}) as s:
    for i in range(60):
        s.deposit("b", [f"{{i}} {{big}}"], unit(100 + i)[None])
"""
        )
        assert grower.wait(120) == 0
        assert s.stats().records == 61
        assert s.recall("b", unit(159), k=1)[0].text.startswith("59 ")
        s.deposit("a", ["second"], unit(1)[None])
        assert s.recall("a", unit(1), k=1)[0].text == "second"
        assert s.verify() == []


def test_threads_reading_at_once_each_see_the_store(store_path):
    # More concurrent reads than the handles kept idle: each still reads a
    # whole snapshot, and the store closes and reopens cleanly after.
    with Store(store_path, dim=DIM) as s:
        vecs = np.stack([unit(i) for i in range(40)])
        s.deposit_many([(f"o{i % 4}", [f"fact {i}"], vecs[i : i + 1]) for i in range(40)])
        queries = [(f"o{i % 4}", vecs[i]) for i in range(40)] * 20
        got = s.recall_many(queries, k=1)
        assert [m[0].text for m in got] == [f"fact {i}" for i in range(40)] * 20
    with Store(store_path) as s:
        assert s.stats().records == 40
        assert s.verify() == []
