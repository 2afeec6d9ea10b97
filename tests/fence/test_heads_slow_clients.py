"""The heads server process under many slow clients and a low descriptor limit: it keeps
answering, cuts the slow ones, and ends on SIGTERM."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import pytest
from agentsensus import Store
from agentsensus.planfence.transport import HeadsClient, OwnerUnavailable
from slow_clients import closed_by_server, free_port, served_while_trickling, slow_connections, start, stop

NOFILE, SLOW = 192, 200  # room for 64 connections (see listen_guard); 200 slow clients are past the limit


@pytest.mark.slow
def test_slow_headers_do_not_lock_the_heads_server(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=8) as store:
        store.fence.publish("weather", "ann", "fog")
    port = free_port()
    cmd = [sys.executable, "-m", "agentsensus.planfence.transport", path, "--owner", "ann"]
    cmd += ["--port", str(port), "--header-timeout", "2"]
    proc = start(cmd, port, nofile=NOFILE)
    socks: list[socket.socket] = []
    try:
        socks = slow_connections(port, SLOW, b"GET /v1/value/ann?key=weather HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert len(socks) == SLOW
        with HeadsClient({"ann": f"http://127.0.0.1:{port}"}, timeout=5) as client:

            def ask() -> bool:
                try:
                    return client.fetch("ann", "weather") == (1, b"fog")
                except OwnerUnavailable:
                    return False

            assert served_while_trickling(socks, ask)
        assert all(closed_by_server(s) for s in socks)
    finally:
        for s in socks:
            s.close()
        assert stop(proc) == 0
