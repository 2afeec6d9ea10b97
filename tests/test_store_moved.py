"""No acknowledgement the store cannot keep: a commit to a store whose file
was deleted or replaced while open is refused (StoreMovedError, nothing
acknowledged), and an open while another process grows the map succeeds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from agentsensus import Store, StoreMovedError
from helpers import DIM, unit


def test_deposits_after_the_directory_was_deleted_are_refused(store_path) -> None:
    s = Store(store_path, dim=DIM, judge=None)
    try:
        s.deposit("alice", ["before"], unit(1)[None])
        shutil.rmtree(store_path)
        for n in range(3):  # every later write too, not only the first
            with pytest.raises(StoreMovedError, match="deleted or replaced while the store was open") as e:
                s.deposit("alice", [f"after {n}"], unit(2 + n)[None])
            assert "\n" not in str(e.value)
    finally:
        s.close()


def test_a_renamed_store_directory_is_refused(store_path) -> None:
    """The store's path no longer leads to its file: a later open at that
    path would not see the write, so it is not acknowledged."""
    s = Store(store_path, dim=DIM, judge=None)
    try:
        os.rename(store_path, store_path + "-moved")
        with pytest.raises(StoreMovedError):
            s.deposit("alice", ["after"], unit(2)[None])
    finally:
        s.close()


def test_a_file_renamed_over_data_mdb_is_refused(tmp_path) -> None:
    path, other = os.fspath(tmp_path / "store"), os.fspath(tmp_path / "other")
    with Store(other, dim=DIM, judge=None) as o:
        o.deposit("bob", ["another store"], unit(7)[None])
    s = Store(path, dim=DIM, judge=None)
    try:
        s.deposit("alice", ["before"], unit(1)[None])
        os.replace(os.path.join(other, "data.mdb"), os.path.join(path, "data.mdb"))
        with pytest.raises(StoreMovedError):
            s.deposit("alice", ["after"], unit(2)[None])
    finally:
        s.close()
    with Store(path, create=False) as s:  # the file now there is the other store, untouched
        assert s.owned("alice") == [] and len(s.owned("bob")) == 1


GROWER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from agentsensus import Store
    rng = np.random.default_rng(0)
    with Store(sys.argv[1], dim=16, judge=None, map_size=65536, sync=False) as s:
        print("ready", flush=True)
        for i in range(int(sys.argv[2])):
            s.deposit("grower", [f"statement {i} " + "x" * 3000], rng.standard_normal((1, 16)).astype(np.float32))
    """
)


@pytest.mark.slow
def test_opening_while_another_process_grows_the_map_never_fails(store_path) -> None:
    with Store(store_path, dim=DIM, judge=None, map_size=65536) as s:
        s.deposit("alice", ["first"], unit(1)[None])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", GROWER, store_path, "1500"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        opens = 0
        while child.poll() is None and opens < 500:
            with Store(store_path, create=False, readonly=opens % 2 == 0, map_size=65536) as s:
                assert s.stats().records >= 1
            opens += 1
        assert child.wait(timeout=120) == 0
        assert opens > 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    with Store(store_path, create=False) as s:
        assert s.verify() == []
        assert s.stats().records == 1501
