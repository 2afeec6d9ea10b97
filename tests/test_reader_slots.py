"""Reader slots of killed processes are cleaned: a process killed while it
held a read transaction leaves its LMDB reader slot behind (pinning old
pages, and taking one of the table's slots) until a later open clears it."""

from __future__ import annotations

import signal
import subprocess
import sys

from agentsensus import Store
from helpers import DIM, unit


def py(code: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", f"import sys; sys.path[:0] = {sys.path!r}\n" + code], **kw)


def reader_pids(path: str) -> str:
    """LMDB's reader table as py-lmdb prints it (pid, thread, txnid)."""
    p = py(
        f"import lmdb\nenv = lmdb.open({path!r}, max_dbs=32, readonly=True)\nprint(env.readers())",
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = p.communicate(timeout=60)
    return out


def test_slot_of_a_killed_reader_is_cleared_by_the_next_open(store_path):
    # The slot table lives as long as some process keeps the store open (the
    # first opener after everyone closed starts a fresh table): this test
    # process is that long-lived process.
    with Store(store_path, dim=DIM) as s:
        s.deposit("a", ["something"], unit(1)[None])
        holder = py(
            f"import lmdb, time\nenv = lmdb.open({store_path!r}, max_dbs=32, readonly=True)\n"
            "txn = env.begin()\nprint('holding', flush=True)\ntime.sleep(120)",
            stdout=subprocess.PIPE,
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert f"{holder.pid} " in reader_pids(store_path)  # the dead process's slot is still taken
        opener = py(f"from agentsensus import Store\nStore({store_path!r}).close()")
        assert opener.wait(60) == 0  # its open ran mdb_reader_check
        assert f"{holder.pid} " not in reader_pids(store_path)
        s.deposit("a", ["more"], unit(2)[None])
        assert s.verify() == []
