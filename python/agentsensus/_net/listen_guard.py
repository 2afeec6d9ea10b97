"""What a listening server guards at its socket: who may reach it and how many connections it holds.

Shared by the Planfence heads server and ``agentsensus mcp``:

- `refuse_open_host`: a server on a non-loopback address must
  authenticate its clients, or it refuses to start;
- `connection_cap`: the most connections a server holds at once,
  below the process's descriptor limit, so that ``accept()`` never runs out
  of descriptors (asyncio then retries in a loop and the server stops
  answering anyone);
- `capped`: a protocol factory that answers a connection past the cap
  with ``503`` and closes it at once, before it can hold a descriptor.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any, Callable, Optional, Union

try:
    import resource
except ImportError:  # pragma: no cover - not on Unix: no descriptor limit to read
    resource = None  # type: ignore[assignment]

__all__ = [
    "ACCEPT_BATCH",
    "RESERVED_DESCRIPTORS",
    "capped",
    "connection_cap",
    "is_loopback",
    "refuse_open_host",
]

#: Descriptors kept for everything but connections: the store's files,
#: stdio, the event loop's own, a model's files.
RESERVED_DESCRIPTORS = 64
#: The listen backlog. asyncio accepts up to this many connections in one go
#: before any is refused, so the cap leaves room for one such batch.
ACCEPT_BATCH = 64

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 26\r\nConnection: close\r\n\r\nbusy: too many connections"
)


def bare(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def ip(host: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    """``host`` as an IP address, or ``None`` for a name."""
    try:
        return ipaddress.ip_address(bare(host))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    addr = ip(host)
    return host.lower() == "localhost" if addr is None else addr.is_loopback


def refuse_open_host(host: str, protected: bool, *, lacks: str, exposes: str, remedy: str) -> None:
    """Raises ``ValueError`` (one line) when ``host`` is not a loopback
    address and the server is not ``protected`` (no authentication): anyone
    who can reach the address could ``exposes``."""
    if not protected and not is_loopback(host):
        raise ValueError(
            f"host {host!r} is not a loopback address and {lacks}: anyone who can reach it could {exposes}. {remedy}"
        )


def connection_cap(requested: int) -> int:
    """The most connections a server may hold: ``requested``, lowered to
    what the soft descriptor limit (``RLIMIT_NOFILE``) leaves after
    `RESERVED_DESCRIPTORS` and one accept batch. ``ValueError`` when
    the limit leaves no room at all."""
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        raise ValueError(f"the connection limit must be a positive int, got {requested!r}")
    if resource is None:  # pragma: no cover
        return requested
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested
    room = int(soft) - RESERVED_DESCRIPTORS - ACCEPT_BATCH
    if room < 1:
        raise ValueError(
            f"the descriptor limit ({soft}) leaves no room for connections: raise it above "
            f"{RESERVED_DESCRIPTORS + ACCEPT_BATCH} (ulimit -n)"
        )
    return min(requested, room)


class _Busy(asyncio.Protocol):
    """A connection past the cap: answered 503 and closed at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(_BUSY)
        transport.close()


def capped(factory: Callable[..., Any], live: Callable[[], int], cap: int) -> Callable[..., Any]:
    """A protocol factory that makes ``factory``'s protocols while fewer than
    ``cap`` connections are ``live``, and a 503-and-close one past that (its
    arguments are passed through to ``factory``)."""

    def make(*args: Any, **kwargs: Any) -> Any:
        return _Busy() if live() >= cap else factory(*args, **kwargs)

    return make
