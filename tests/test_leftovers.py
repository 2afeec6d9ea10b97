"""What a killed import or compaction leaves behind is removed by the next
open, import or compact, and only when it is provably abandoned: an import
directory whose lock a live import holds stays."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys

import pytest
from agentsensus import Store
from agentsensus.io.compact import compact
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from agentsensus.io.leftovers import LOCK_NAME
from helpers import unit

# A child that imports the export at argv[1] into argv[2] and stops after
# its first batch, holding its directory, until it is killed.
_STUCK_IMPORT = """
import sys, time
from agentsensus.io.importer import import_jsonl

def progress(done, total):
    print("importing", flush=True)
    time.sleep(120)

import_jsonl(open(sys.argv[1]), sys.argv[2], batch=10, progress=progress)
"""


@pytest.fixture
def export_file(tmp_path) -> str:
    src, out = str(tmp_path / "src"), str(tmp_path / "src.jsonl")
    with Store(src, dim=16) as s:
        for i in range(40):
            s.deposit(f"o{i % 3}", [f"statement {i}"], unit(i))
        with open(out, "w") as f:
            export_jsonl(s, f)
    return out


def leftovers(target: str) -> list[str]:
    return glob.glob(target + ".importing-*")


@pytest.fixture
def stuck_import(export_file, tmp_path):
    """A live import of export_file into tmp_path/target, stopped mid-way."""
    target = str(tmp_path / "target")
    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK_IMPORT, export_file, target], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "importing"
        assert len(leftovers(target)) == 1
        yield target, child
    finally:
        child.kill()
        child.wait(timeout=30)


def kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)


@pytest.mark.slow
def test_a_live_import_is_left_alone_and_a_killed_one_removed_by_the_next_open(stuck_import):
    target, child = stuck_import
    live = leftovers(target)
    with Store(target, dim=16):  # an open of the target while the import runs
        pass
    assert leftovers(target) == live and os.path.exists(os.path.join(live[0], LOCK_NAME))
    kill(child)
    assert leftovers(target) == live  # kill -9 leaves it, as before
    with Store(target, dim=16):
        pass
    assert leftovers(target) == []


@pytest.mark.slow
def test_a_killed_import_is_removed_by_the_next_import(stuck_import, export_file):
    target, child = stuck_import
    kill(child)
    assert len(leftovers(target)) == 1
    with open(export_file) as f:
        import_jsonl(f, target)
    assert leftovers(target) == []
    with Store(target) as s:
        assert s.stats().records == 40 and s.verify() == []


def test_a_killed_import_is_removed_by_the_next_compact(tmp_path):
    """The directory as a killed import leaves it (its lock file, no
    holder), beside a store that exists: compact removes it."""
    target = str(tmp_path / "target")
    Store(target, dim=16).close()
    os.makedirs(target + ".importing-x")
    open(os.path.join(target + ".importing-x", LOCK_NAME), "w").close()
    compact(target)
    assert leftovers(target) == []


def test_a_directory_without_its_lock_is_not_provably_abandoned(tmp_path):
    target = str(tmp_path / "t")
    os.makedirs(target + ".importing-nolock")
    with Store(target, dim=16):
        pass
    assert leftovers(target) == [target + ".importing-nolock"]


def test_a_finished_import_leaves_no_lock_file_in_the_store(export_file, tmp_path):
    target = str(tmp_path / "done")
    with open(export_file) as f:
        import_jsonl(f, target)
    assert not os.path.exists(os.path.join(target, LOCK_NAME)) and leftovers(target) == []


def test_a_compaction_copy_left_behind_is_removed_by_the_next_open(tmp_path):
    """compact.tmp/ as a compaction killed mid-copy leaves it (the copy is
    written there before the rename): the next writable open removes it,
    since an open proves no compaction runs (it holds LMDB's lock)."""
    path = str(tmp_path / "s")
    with Store(path, dim=16) as s:
        s.deposit("a", ["x"], unit(1))
    os.makedirs(os.path.join(path, "compact.tmp"))
    with open(os.path.join(path, "compact.tmp", "data.mdb"), "wb") as f:
        f.write(b"\0" * 65536)
    with Store(path, readonly=True):
        pass
    assert os.path.isdir(os.path.join(path, "compact.tmp"))  # a read-only open writes nothing
    with Store(path) as s:
        assert s.stats().records == 1
    assert not os.path.exists(os.path.join(path, "compact.tmp"))


def test_a_compaction_copy_left_behind_is_replaced_by_the_next_compact(tmp_path):
    path = str(tmp_path / "s")
    with Store(path, dim=16) as s:
        s.deposit("a", ["x"], unit(1))
    os.makedirs(os.path.join(path, "compact.tmp"))
    with open(os.path.join(path, "compact.tmp", "data.mdb"), "wb") as f:
        f.write(b"junk")
    compact(path)
    assert not os.path.exists(os.path.join(path, "compact.tmp"))
    with Store(path) as s:
        assert s.verify() == [] and s.stats().records == 1


@pytest.mark.slow
def test_a_real_compaction_killed_mid_copy_is_cleaned(tmp_path):
    """kill -9 of a child compacting a store, at whatever point it reached:
    afterwards the store opens, verifies, keeps its records, and no
    compact.tmp/ remains after that open."""
    path = str(tmp_path / "big")
    with Store(path, dim=16, sync=False) as s:
        s.deposit_many([(f"o{i % 5}", [f"statement {i} " + "pad " * 200], unit(i)) for i in range(3000)])
    code = "import sys; from agentsensus.io.compact import compact\nfor _ in range(10000): compact(sys.argv[1])"
    child = subprocess.Popen([sys.executable, "-c", code, path])
    tmp = os.path.join(path, "compact.tmp")
    for _ in range(200000):  # until the copy is being written (or the child ended)
        if os.path.exists(os.path.join(tmp, "data.mdb")) or child.poll() is not None:
            break
    child.kill()
    child.wait(timeout=30)
    with Store(path) as s:
        assert s.stats().records == 3000 and s.verify() == []
    assert not os.path.exists(tmp)
