"""Privacy of forget, and `agentsensus compact`: a record nobody owns leaves
search, get, the export and the merge log at once, and leaves the file's
bytes after compaction."""

from __future__ import annotations

import os
import subprocess
import sys

import agentsensus
import numpy as np
import pytest
from agentsensus import Store, compact
from helpers import DIM, unit

SECRET = "the vault code is 7141-SECRET-PASSPHRASE"
LONG_SECRET = "LONG-SECRET " + "confidential plan " * 1200  # about 20 KiB: LMDB overflow pages


def data_bytes(path: str) -> bytes:
    with open(os.path.join(path, "data.mdb"), "rb") as f:
        return f.read()


def build(path: str) -> None:
    with Store(path, dim=DIM) as s:
        for i in range(30):
            s.deposit(f"agent{i % 3}", [f"public fact {i}"], unit(i)[None])
        d = s.deposit("alice", [SECRET, LONG_SECRET], np.stack([unit(100), unit(101)]))
        s.deposit("bob", [SECRET], unit(102)[None])  # merges: the secret has two owners
        for owner in ("alice", "bob"):
            for rid in set(d.ids) & set(s.owned(owner)):
                s.forget(owner, rid)
        for rid in d.ids:
            with pytest.raises(KeyError):
                s.get(rid)
        assert all(SECRET not in m.text and "LONG-SECRET" not in m.text for m in s.records())
        assert all(SECRET not in (m.kept + m.discarded) for m in s.merges())
        for owner in ("alice", "bob"):
            assert s.recall(owner, unit(100), k=10) == []
        assert s.verify() == []


def test_forgotten_text_leaves_the_file_after_compact(store_path):
    build(store_path)
    index = os.path.join(store_path, "index.usearch")
    index_before = os.path.getmtime(index)
    # LMDB left the deleted texts in free pages of the file.
    assert SECRET.encode() in data_bytes(store_path) and b"LONG-SECRET" in data_bytes(store_path)
    r = compact(store_path)
    assert r.after <= r.before
    raw = data_bytes(store_path)
    assert SECRET.encode() not in raw and b"LONG-SECRET" not in raw and b"confidential plan" not in raw
    assert not os.path.exists(os.path.join(store_path, "compact.tmp"))
    with Store(store_path) as s:
        assert s.verify() == []
        assert s.stats().records == 30
        assert [m.text for m in s.recall("agent1", unit(4), k=1)] == ["public fact 4"]
    # The index file was still valid: loaded as it was, not rebuilt (a
    # rebuilt index is saved again on close).
    assert os.path.getmtime(index) == index_before
    with Store(store_path) as s:
        s.deposit("carol", ["after compaction"], unit(200)[None])
        assert s.verify() == []


def test_compact_refuses_a_store_open_here_or_elsewhere(store_path):
    build(store_path)
    with Store(store_path):
        with pytest.raises(agentsensus.Error, match="open in this process"):
            compact(store_path)
    code = f"import sys, time; sys.path[:0] = {sys.path!r}\nfrom agentsensus import Store\ns = Store({store_path!r})\nprint('open', flush=True)\ntime.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"open"
        before = data_bytes(store_path)
        with pytest.raises(agentsensus.Error, match="open in another process"):
            compact(store_path)
        assert data_bytes(store_path) == before  # nothing written
    finally:
        child.kill()
        child.wait()
    with pytest.raises(FileNotFoundError):
        compact(os.path.join(store_path, "nowhere"))


def test_compact_command(store_path):
    build(store_path)
    r = subprocess.run(
        [sys.executable, "-m", "agentsensus.cli", "compact", store_path],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("data.mdb: ")
    assert SECRET.encode() not in data_bytes(store_path)
