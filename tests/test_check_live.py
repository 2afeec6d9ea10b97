"""`agentsensus check` on a store another process is writing: no false
alarms (one snapshot, the index caught up to it), and ``check --repair``
refuses while another process has the store open."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap

import lmdb
import pytest
from agentsensus import Error, Store
from helpers import DIM, unit

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from agentsensus import Store, judges
    rng = np.random.default_rng(1)
    with Store(sys.argv[1], dim=16, judge=judges.threshold(0.9), min_similarity=0.9, sync=False) as s:
        print("ready", flush=True)
        for i in range(int(sys.argv[2])):
            s.deposit(f"w{i % 5}", [f"statement {i} a", f"statement {i} b"], rng.standard_normal((2, 16)).astype(np.float32))
            if i % 7 == 3 and s.owned(f"w{i % 5}"):
                s.forget(f"w{i % 5}", s.owned(f"w{i % 5}")[0])
    """
)

HOLDER = textwrap.dedent(
    """
    import sys
    from agentsensus import Store
    with Store(sys.argv[1], create=False):
        print("ready", flush=True)
        sys.stdin.readline()
    """
)


def check(path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentsensus.cli", "check", path, *extra], capture_output=True, text=True, env=ENV
    )


def seed(path: str) -> None:
    with Store(path, dim=DIM, judge=None) as s:
        for n in range(20):
            s.deposit(f"o{n % 3}", [f"seed {n}"], unit(n)[None])


@pytest.mark.slow
def test_check_on_a_store_being_written_raises_no_false_alarm(store_path) -> None:
    seed(store_path)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, store_path, "4000"], stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        runs = []
        while writer.poll() is None and len(runs) < 12:
            r = check(store_path)
            runs.append((r.returncode, r.stdout.strip(), r.stderr.strip()))
        assert runs and all(run == (0, "ok", "") for run in runs), [run for run in runs if run[0]]
    finally:
        writer.kill()
        writer.wait()


@pytest.mark.slow
def test_check_repair_refuses_a_store_another_process_has_open(store_path) -> None:
    seed(store_path)
    with Store(store_path, create=False) as s:
        rid = s.owned("o1")[0]
    # Real damage, so that repair would run: drop one side of an ownership pair.
    env = lmdb.open(store_path, max_dbs=64, subdir=True)
    owned = env.open_db(b"owned", create=False, dupsort=True, dupfixed=True, integerdup=True)
    with env.begin(write=True) as txn:
        assert txn.delete(struct.pack(">I", 2), struct.pack("=Q", rid), db=owned)
    env.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        r = check(store_path, "--repair")
        assert r.returncode == 1
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "open in another process" in lines[0], r.stderr
        with Store(store_path, create=False) as s:  # nothing was repaired
            assert s.verify() != []
            with pytest.raises(Error, match="open in another process"):
                s.repair()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=60)
    r = check(store_path, "--repair")  # alone now: repaired
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
