"""``agentsensus mcp --transport streamable-http``: the server's HTTP side (uvicorn, h11).

What it adds to the SDK's ``streamable_http_app``:

- a request deadline: a connection has ``request_timeout`` seconds from
  connecting (or from its previous answer) to send a whole request, headers
  and body, however slowly it trickles bytes; then it is closed (uvicorn
  alone only times out idle keep-alive connections);
- a connection cap below the descriptor limit (`agentsensus._net.listen_guard`):
  a connection past it is answered 503 and closed as soon as it is accepted;
- SIGTERM and SIGINT stop it promptly: requests in flight get
  ``shutdown_timeout`` seconds, then are cancelled, and ``serve`` returns
  (uvicorn would re-raise the signal, which skips closing the store).
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from typing import Any, Iterator, Optional

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .._net.listen_guard import ACCEPT_BATCH, capped, connection_cap

__all__ = ["serve"]

# h11 states of the peer once its whole request is in (or it is going away).
_REQUEST_IN = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


class _DeadlineH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline on receiving each request."""

    def __init__(self, *args: Any, request_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_timeout = request_timeout
        self._deadline: Optional[Any] = None

    def _arm(self) -> None:
        self._disarm()
        if self.conn.their_state not in _REQUEST_IN:
            self._deadline = self.loop.call_later(self._request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: Any) -> None:
        """Starts the first request's deadline."""
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Stops the deadline once the whole request is in."""
        super().data_received(data)
        if self._deadline is not None and self.conn.their_state in _REQUEST_IN:
            self._disarm()

    def on_response_complete(self) -> None:
        """Starts the next request's deadline (unless it is already in)."""
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        """Drops the deadline with the connection."""
        self._disarm()
        super().connection_lost(exc)


class _Server(uvicorn.Server):
    """A uvicorn server that ends on SIGTERM/SIGINT without re-raising the signal."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Installs the exit handlers while serving; restores the old ones after."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)


def serve(
    app: Any,
    host: str,
    port: int,
    *,
    request_timeout: float = 10.0,
    max_connections: int = 256,
    keep_alive: float = 5.0,
    shutdown_timeout: float = 3.0,
    log_level: str = "info",
) -> None:
    """Serves the ASGI ``app`` on ``host:port`` until SIGTERM or SIGINT."""
    cap = connection_cap(max_connections)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        backlog=ACCEPT_BATCH,
        timeout_keep_alive=int(max(1, round(keep_alive))),
        timeout_graceful_shutdown=int(max(1, round(shutdown_timeout))),
    )
    server = _Server(config)
    protocol = functools.partial(_DeadlineH11, request_timeout=request_timeout)
    # uvicorn calls config.http as the protocol factory: a callable fits (config.load keeps it).
    config.http = capped(protocol, lambda: len(server.server_state.connections), cap)  # type: ignore[assignment]
    server.run()
