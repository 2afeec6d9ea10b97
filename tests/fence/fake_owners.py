"""Hostile heads servers for the transport tests, on 127.0.0.1 only: a spoof
that answers every key as unchanged (it echoes the recorded versions), and a
proxy that records a real server's answer and later replays it.

Built on the standard library's HTTP server, so they share no code with the
transport they attack."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

# (method, path, headers, body) -> (status, headers, body)
Handler = Callable[[str, str, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]


def decode_query(query: bytes) -> list[tuple[str, int]]:
    """The (key, recorded version) entries of an encoded head query
    (cpp/include/agentsensus/heads_codec.hpp), front coding undone."""
    pos = 1

    def varint() -> int:
        nonlocal pos
        v, shift = 0, 0
        while True:
            c = query[pos]
            pos += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7

    assert query[0] == 0x01
    out, prev = [], b""
    for _ in range(varint()):
        shared, n = varint(), varint()
        key = prev[:shared] + query[pos : pos + n]
        pos += n
        out.append((key.decode(), varint()))
        prev = key
    return out


def encode_answer(pairs: list[tuple[int, bool]]) -> bytes:
    out = bytearray([0x01])

    def put(v: int) -> None:
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)

    put(len(pairs))
    for head, same in pairs:
        put(head << 1 | int(same))
    return bytes(out)


def echo_spoof(mac: Optional[str] = None) -> Handler:
    """Answers every head query "unchanged": each key at its recorded
    version with the same digest, optionally with a made-up MAC header."""

    def handle(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method != "POST":
            return 404, {}, b"not found"
        answer = encode_answer([(recorded, True) for _, recorded in decode_query(body)])
        extra = {"X-Agentsensus-Mac": mac} if mac else {}
        return 200, {"Content-Type": "application/octet-stream", **extra}, answer

    return handle


class RecordingProxy:
    """Forwards to a real server and keeps its last answer; once
    ``replaying`` is set, sends that answer back instead of forwarding."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.replaying = False
        self.recorded: Optional[tuple[int, dict[str, str], bytes]] = None

    def __call__(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        if self.replaying and self.recorded is not None:
            return self.recorded
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            fwd = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
            fwd["Host"] = f"127.0.0.1:{self.port}"
            c.request(method, path, body=body or None, headers=fwd)
            r = c.getresponse()
            keep = {
                k: v for k, v in r.getheaders() if k.lower() not in ("content-length", "connection", "date", "server")
            }
            self.recorded = (r.status, keep, r.read())
        finally:
            c.close()
        return self.recorded


class FakeOwner:
    """An HTTP server on 127.0.0.1 answering through ``handler``; a context
    manager that stops it."""

    def __init__(self, handler: Handler, port: int = 0) -> None:
        self.requests = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                outer.requests += 1
                status, headers, out = handler(self.command, self.path, dict(self.headers.items()), body)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FakeOwner":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)
