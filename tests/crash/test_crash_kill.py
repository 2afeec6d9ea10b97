"""SIGKILL at random points: a writer running deposits, deposit_many rounds,
forgets and Planfence writes, and a process killed while saving the index.
The long version of the first test is bench/crash_soak.py."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
from agentsensus import Store
from trial import run_trial

pytestmark = pytest.mark.slow  # writer processes killed mid-operation

DIM = 32


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_writer_killed_at_a_random_point_loses_nothing(tmp_path, seed):
    result = run_trial(os.fspath(tmp_path), seed, max_ops=120)
    assert result.acknowledged >= result.kill_after


def _vectors(n: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_kill_during_index_save_never_serves_wrong_results(tmp_path):
    path = os.fspath(tmp_path / "store")
    base = _vectors(3000, 1)
    late = np.random.default_rng(2).standard_normal((400, DIM)).astype(np.float32)
    late /= np.linalg.norm(late, axis=1, keepdims=True)
    by_text = {f"base {n // 10} {n % 10}": base[n] for n in range(3000)}
    by_text.update({f"late {n // 4} {n % 4}": late[n] for n in range(400)})
    pristine = os.fspath(tmp_path / "pristine")
    with Store(pristine, dim=DIM) as s:  # closing saves the index
        for r in range(3):
            items = [
                (f"o{j % 4}", [f"base {r * 100 + j} {t}" for t in range(10)], base[(r * 100 + j) * 10 :][:10])
                for j in range(100)
            ]
            s.deposit_many(items, round=r)
    with open(os.path.join(pristine, "index.usearch"), "rb") as f:
        saved = f.read()
    # The victim changes the store (adds and forgets), then closes: its
    # index save is what gets killed, as soon as the temporary file appears.
    code = f"""
import sys
sys.path[:0] = {sys.path!r}
import numpy as np
from agentsensus import Store
v = np.random.default_rng(2).standard_normal((400, {DIM})).astype(np.float32)
s = Store({path!r})
s.deposit_many([(f"o{{j % 4}}", [f"late {{j}} {{t}}" for t in range(4)], v[j * 4:(j + 1) * 4]) for j in range(100)])
for rid in s.owned("o1")[:50]:
    s.forget("o1", rid)
print("closing", flush=True)
s.close()
print("closed", flush=True)
"""
    hit = False
    for _ in range(5):  # each attempt on a fresh copy; retried if the save finished first
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(pristine, path)
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"closing"
        tmp_glob = os.path.join(path, "index.usearch.tmp.*")
        while child.poll() is None and not glob.glob(tmp_glob):
            pass
        child.send_signal(signal.SIGKILL)
        child.wait()
        hit = bool(glob.glob(tmp_glob))
        if hit:
            break
    assert hit, "no kill landed inside an index save"
    # The old index file survived the killed save (rename is atomic)...
    with open(os.path.join(path, "index.usearch"), "rb") as f:
        assert f.read() == saved
    # ...and the next open catches it up from the journal: same records,
    # same vectors, same answers as an exact scan.
    with Store(path) as s:
        assert not glob.glob(tmp_glob)  # the dead saver's temporary file is cleared
        assert s.verify() == []  # the index holds exactly LMDB's ids and vectors
        by_id = {rec.id: by_text[rec.text] for rec in s.records()}
        assert len(by_id) == 3000 + 400 - 50
        for owner in ("o0", "o1", "o2", "o3"):
            owned = s.owned(owner)
            for seed in range(5):
                q = _vectors(1, 100 + seed)[0]
                want = sorted(owned, key=lambda i: (-float(by_id[i] @ q), i))[:5]
                assert [m.id for m in s.recall(owner, q, k=5, expand=False)] == want
