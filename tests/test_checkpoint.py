"""Store.checkpoint: the index saved with its journal position, so an open
after a crash replays only the journal after it (the position is read from
the index file's header, schema.hpp "index file")."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap

import pytest
from agentsensus import Error, Store
from helpers import DIM, unit

# magic[8] then IndexHeader: uuid[16], journal_seq u64 (native), ...
_SEQ_AT = 8 + 16


def index_seq(path: str) -> int:
    with open(os.path.join(path, "index.usearch"), "rb") as f:
        head = f.read(_SEQ_AT + 8)
    return int(struct.unpack("=Q", head[_SEQ_AT:])[0])


# Deposits `before` records, checkpoints (printing the seq), deposits `after`
# more, then kills itself: nothing past the checkpoint was saved to the index.
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    from agentsensus import Store
    path, before, after, dim = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(7)
    s = Store(path, dim=dim)
    def put(n, tag):
        for i in range(n):
            v = rng.standard_normal(dim).astype(np.float32)
            s.deposit(f"o{i % 3}", [f"{tag} {i}"], v[None, :])
    put(before, "before")
    if before:
        print(s.checkpoint(), flush=True)
    put(after, "after")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def crash(path: str, before: int, after: int) -> str:
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, path, str(before), str(after), str(DIM)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == -signal.SIGKILL, r.stderr
    return r.stdout.strip()


def test_checkpoint_returns_the_journal_end_and_writes_it(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=DIM) as s:
        for i in range(5):
            s.deposit("a", [f"fact {i}"], unit(i)[None, :])
        seq = s.checkpoint()
        assert seq == index_seq(path) >= 5
        assert s.checkpoint() == seq  # nothing new: the same position
        s.deposit("b", ["later"], unit(99)[None, :])
        assert s.checkpoint() > seq
        assert [m.text for m in s.recall("a", unit(3), k=1)] == ["fact 3"]


@pytest.mark.slow
def test_a_checkpointed_store_killed_later_reopens_from_the_checkpoint(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    seq = int(crash(path, before=30, after=12))
    # The file on disk is the checkpoint's, not a later one and not none.
    assert index_seq(path) == seq
    with Store(path, dim=DIM) as s:
        assert s.verify() == []
        assert s.stats().records == 42
        # what came after the checkpoint was replayed from the journal
        assert s.checkpoint() > seq
        hits = s.recall("o0", unit(0), k=50, expand=False)
        assert {m.id for m in hits} == set(s.owned("o0"))


@pytest.mark.slow
def test_a_store_killed_without_a_checkpoint_has_no_index_file(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    crash(path, before=0, after=10)
    assert not os.path.exists(os.path.join(path, "index.usearch"))
    with Store(path, dim=DIM) as s:  # rebuilt from the vectors
        assert s.verify() == []
        assert s.stats().records == 10


def test_checkpoint_on_a_read_only_or_closed_store_raises(tmp_path) -> None:
    path = os.fspath(tmp_path / "s")
    Store(path, dim=DIM).close()
    with Store(path, readonly=True) as r:
        with pytest.raises(Error, match="read-only"):
            r.checkpoint()
    s = Store(path, dim=DIM)
    s.close()
    with pytest.raises(Error, match="closed"):
        s.checkpoint()
