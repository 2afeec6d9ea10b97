"""``agentsensus mcp`` over HTTP under many slow clients and a low descriptor limit: it keeps
answering, cuts the slow ones, and ends on SIGTERM."""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import pytest
from slow_clients import closed_by_server, free_port, served_while_trickling, slow_connections, start, stop

# 192 descriptors leave room for 64 connections (listen_guard keeps 64 for
# the store and 64 for one accept batch); 200 slow clients are well past both
# the cap and the limit itself, which is what locked the server before.
NOFILE, SLOW = 192, 200


@pytest.mark.slow
def test_slow_headers_do_not_lock_the_server(tmp_path: Any) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "agentsensus.integrations.mcp_server", os.fspath(tmp_path / "s")]
    cmd += ["--transport", "streamable-http", "--port", str(port), "--request-timeout", "2"]
    proc = start(cmd, port, nofile=NOFILE)
    socks: list[socket.socket] = []
    try:
        socks = slow_connections(port, SLOW, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert len(socks) == SLOW

        def ask() -> bool:
            # A whole request: any answer but "busy" means the server reads requests again.
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.settimeout(5)
                    s.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % port)
                    answer = s.recv(64)
            except OSError:
                return False
            return answer.startswith(b"HTTP/1.1 ") and not answer.startswith(b"HTTP/1.1 503")

        assert served_while_trickling(socks, ask)
        # Every slow connection was closed by the server: past the cap at once, the rest at their deadline.
        assert all(closed_by_server(s) for s in socks)
    finally:
        for s in socks:
            s.close()
        assert stop(proc) == 0  # SIGTERM: a clean exit (the store closed), not death by the signal
