"""A process killed mid-write loses no committed version."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from agentsensus import Store


@pytest.mark.slow
def test_kill_during_publish_and_derive_loses_no_committed_version(tmp_path):
    path = os.fspath(tmp_path / "s")
    code = (
        "import sys; sys.path[:0] = %r\n"
        "from agentsensus import Store\n"
        "s = Store(%r, dim=4)\n"
        "f = s.fence\n"
        "i = 0\n"
        "while True:\n"
        "    i += 1\n"
        "    v = f.publish('req', 'alice', 'r%%d' %% i)\n"
        "    p = f.derive('plan', 'dave', 'p%%d' %% i, {'req': v})\n"
        "    print(v, p, flush=True)\n" % (sys.path, path)
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    last = None
    for _ in range(40):
        last = child.stdout.readline().split()
    child.send_signal(signal.SIGKILL)
    child.wait()
    req, plan = int(last[0]), int(last[1])
    with Store(path) as s:
        f = s.fence
        assert f.head("req") >= req and f.head("plan") >= plan
        for v in range(1, f.head("req") + 1):
            assert f.value("req", v) == f"r{v}".encode()
        for v in range(1, f.head("plan") + 1):
            assert f.value("plan", v) == f"p{v}".encode()
        assert f.check("plan").current or f.head("req") == f.head("plan") + 1
