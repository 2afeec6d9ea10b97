"""A server process under a lowered descriptor limit, and many slow clients against it (tests only)."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from typing import Callable

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
LIMIT = 120.0  # seconds any wait may take; a hung server fails the test, never the suite


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(cmd: list[str], port: int, nofile: int = 0) -> subprocess.Popen[bytes]:
    """``cmd`` running until ``port`` answers; with ``nofile``, under that
    descriptor limit (set in the child before it runs)."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen(
        cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=lower if nofile else None
    )
    deadline = time.monotonic() + LIMIT
    while True:  # bounded: until the port answers or the deadline
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "the server exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then the exit status; SIGKILL (and a failure) if it does not end within 15 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
        raise AssertionError("the server ignored SIGTERM") from None
    finally:
        if proc.stderr is not None:
            proc.stderr.close()


def slow_connections(port: int, n: int, head: bytes) -> list[socket.socket]:
    """``n`` connections that each sent ``head`` (a request line and some
    headers) and never finish their headers; stops early if a connect fails."""
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(head)
        except OSError:
            break
        socks.append(s)
    return socks


def trickle(socks: list[socket.socket]) -> int:
    """One more header line on each connection; how many took it (the server has not closed them)."""
    open_ = 0
    for s in socks:
        try:
            s.sendall(b"X-Slow: 1\r\n")
            open_ += 1
        except OSError:
            pass
    return open_


def served_while_trickling(socks: list[socket.socket], ask: Callable[[], bool]) -> bool:
    """Keeps the slow connections trickling and asks ``ask`` (a normal
    request: True when it was answered) until it is, or LIMIT."""
    deadline = time.monotonic() + LIMIT
    while time.monotonic() < deadline:
        trickle(socks)
        if ask():
            return True
        time.sleep(0.5)
    return False


def closed_by_server(s: socket.socket) -> bool:
    """Whether the server closed ``s`` (reading gives EOF or an error, after any answer it sent)."""
    s.settimeout(5)
    try:
        while s.recv(4096):
            pass
        return True
    except socket.timeout:
        return False
    except OSError:
        return True
