"""Several processes on one store: readers see consistent snapshots and their
indexes catch up with what another process commits; two writers contend."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from agentsensus import Store
from helpers import DIM, unit

pytestmark = pytest.mark.slow  # writer processes

HERE = os.path.dirname(__file__)


def spawn(code: str) -> subprocess.Popen:
    prelude = f"import sys\nsys.path[:0] = {sys.path!r}\n"
    return subprocess.Popen([sys.executable, "-c", prelude + code], cwd=HERE)


def test_reader_process_sees_writer_commits(store_path):
    Store(store_path, dim=DIM).close()
    writer = spawn(
        f"""
from agentsensus import Store
from helpers import unit
with Store({store_path!r}) as s:
    for i in range(150):
        s.deposit("w", [f"fact {{i}}", f"aside {{i}}"], __import__("numpy").stack([unit(i), unit(10_000 + i)]), round=i)
"""
    )
    seen = 0
    checks = 0
    with Store(store_path, exact_cutoff=0) as s:  # exact_cutoff=0: always through the index
        deadline = time.time() + 60
        while time.time() < deadline:
            done = writer.poll() is not None
            st = s.stats()
            # a snapshot never shows half a deposit
            assert st.records % 2 == 0 and st.records == 2 * st.deposits
            assert st.records >= seen
            seen = st.records
            if st.deposits:
                j = st.deposits - 1
                hits = s.recall("w", unit(j), k=1)
                assert hits and hits[0].text == f"fact {j}" and hits[0].round == j
                checks += 1
            if done:
                break
        assert writer.wait(5) == 0
        assert s.stats().records == 300
        assert s.recall("w", unit(149), k=1)[0].text == "fact 149"
        assert s.verify() == []  # this reader's index caught up with every commit
    assert checks > 0


def test_two_writer_processes_merge_the_same_events(store_path):
    # dim 64: unrelated random events stay far below the judge's threshold
    Store(store_path, dim=64).close()
    code = """
import numpy as np
from agentsensus import Store, judges
from helpers import near, unit
with Store({path!r}, judge=judges.threshold(0.6), min_similarity=0.6) as s:
    for i in range(60):
        s.deposit({name!r}, [f"{name} saw event {{i}}"], near(unit(i, 64), {seed} + i)[None])
"""
    a = spawn(code.format(path=store_path, name="alice", seed=1000))
    b = spawn(code.format(path=store_path, name="bob", seed=2000))
    assert a.wait(120) == 0 and b.wait(120) == 0
    with Store(store_path) as s:
        st = s.stats()
        assert st.records == 60
        assert st.shared == 60 and st.max_owners == 2
        assert len(s.owned("alice")) == len(s.owned("bob")) == 60
