"""The Planfence heads transport: owners in other processes, over HTTP (aiohttp).

`HeadsServer` serves one or more owners' heads from a store;
`HeadsClient` asks each owner once per check, all owners in parallel,
with a timeout. A failure (timeout, refused connection, HTTP error, unknown
owner, an answer that fails verification) is reported per owner and blocks
the action with a reason naming the owner: an unreachable or unproven owner
never lets a stale plan through.

Wire: ``POST /v1/heads/{owner}`` with the encoded head query (the engine's
heads codec: sorted, front-coded keys and varints) as an
``application/octet-stream`` body; the answer
is the encoded reply. ``GET /v1/value/{owner}?key=K`` returns the head value
of ``K`` with its version in the ``X-Version`` header (what a replan fetches).
Every request carries an ``X-Agentsensus-Nonce`` header.

Security (see docs/reliability.md, "The heads transport"):

- ``token=`` on both sides: every request is authenticated and every answer
  is bound to its request by a MAC (`transport_auth`), so a server
  without the token (a spoof, a squatter on the port) or a replayed answer
  cannot make a check pass.
- ``ssl_context=`` on both sides: TLS, mutual if the server's context
  requires client certificates (`server_ssl_context`,
  `client_ssl_context`).
- A server on a non-loopback host with neither refuses to start unless
  ``insecure=True``.

Run an owner's server as a process::

    python -m agentsensus.planfence.transport PATH --owner NAME [--port N] [--token-file F]
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import re
import secrets
import signal
import ssl
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NoReturn, Optional, Union
from urllib.parse import quote, urlsplit

from .. import _core
from .._net.listen_guard import ACCEPT_BATCH, capped, connection_cap, refuse_open_host
from .._net.listen_guard import bare as _bare
from .._net.listen_guard import ip as _ip
from .._net.listen_guard import is_loopback as _is_loopback
from .._store.validation import check_owner
from ..errors import Error
from . import transport_auth as auth
from .fence import check_key
from .memory_links import MEMORY_OWNER
from .transport_auth import MAX_CLOCK_SKEW, MIN_TOKEN_BYTES, new_token, read_token_file

if TYPE_CHECKING:
    from ..store import Store
    from .fence import Fence

try:
    import aiohttp
    from aiohttp import web
except ImportError as e:  # pragma: no cover - only without the extra
    raise ImportError("the heads transport needs aiohttp: pip install 'agentsensus[fence]'") from e

__all__ = [
    "HeadsServer",
    "HeadsClient",
    "OwnerUnavailable",
    "AnswerNotAuthentic",
    "server_ssl_context",
    "client_ssl_context",
    "read_token_file",
    "new_token",
    "MIN_TOKEN_BYTES",
    "MAX_CLOCK_SKEW",
    "DEFAULT_MAX_KEYS",
    "DEFAULT_MAX_QUERY_BYTES",
]

_OCTET = "application/octet-stream"
#: Keys one head query may ask for (a plan's frontier at one owner).
DEFAULT_MAX_KEYS = 65536
#: Bytes of one encoded head query (a query is about 7 bytes per key, plus key text).
DEFAULT_MAX_QUERY_BYTES = 8 << 20
# Bodies above this are verified and answered on a worker thread, so that
# a huge query never holds the event loop that small checks are served on.
_HEAVY_BYTES = 64 << 10
_OP_HEADS, _OP_VALUE = b"heads", b"value"
_HOST_RE = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([0-9]{1,5}))?")
# The client keeps idle connections for less time than a server keeps them
# by default (header_timeout), so it rarely reuses one the server is closing.
_CLIENT_KEEPALIVE = 4.0


class OwnerUnavailable(Error):
    """An owner did not answer (timeout, refused connection, HTTP error)."""


class AnswerNotAuthentic(OwnerUnavailable):
    """An owner's answer failed verification: no MAC, or one that does not
    match this request (a server without the token, or a replayed answer).
    The answer is not used."""


def server_ssl_context(certfile: str, keyfile: str, *, client_ca: Optional[str] = None) -> ssl.SSLContext:
    """A TLS context for `HeadsServer` (TLS 1.2 or later) with the
    server's certificate chain; with ``client_ca``, mutual TLS: a client
    must present a certificate signed by that CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile, keyfile)
    if client_ca is not None:
        ctx.load_verify_locations(cafile=client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_ssl_context(
    cafile: Optional[str] = None, *, certfile: Optional[str] = None, keyfile: Optional[str] = None
) -> ssl.SSLContext:
    """A TLS context for `HeadsClient` that verifies the server's
    certificate and name against ``cafile`` (the system's CAs if ``None``);
    with ``certfile`` (and ``keyfile``), the client's certificate for mutual TLS."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if certfile is not None:
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


def _url_host(host: str) -> str:
    ip = _ip(host)
    return f"[{ip}]" if ip is not None and ip.version == 6 else host


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _query_keys(query: bytes) -> Optional[int]:
    """The key count a head query declares (its first varint), or ``None``
    if it is malformed there (the engine then refuses it)."""
    if len(query) < 2 or query[0] != 0x01:
        return None
    n, shift = 0, 0
    for c in query[1:11]:
        n |= (c & 0x7F) << shift
        if not c & 0x80:
            return n
        shift += 7
    return None


class _Refused(Exception):
    """An HTTP refusal; ``close`` drops the connection after answering."""

    def __init__(self, status: int, text: str, close: bool = False) -> None:
        super().__init__(text)
        self.status, self.text, self.close = status, text, close


def _refuse(status: int, text: str, close: bool = False) -> NoReturn:
    raise _Refused(status, text, close)


# One text for an unknown owner, a key another owner holds and an unknown
# key: an error says nothing about what exists.
_NOT_FOUND = "not found"
_UNAUTHENTICATED = "not authenticated"


class _LoopThread:
    """An asyncio loop on a daemon thread, so synchronous callers can use
    aiohttp (which is asyncio-only)."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Any, timeout: Optional[float] = None) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def cancel_the_rest() -> None:
            # Connections' tasks still pending would be destroyed with the loop.
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            self.run(cancel_the_rest(), timeout=5)
        except Exception:
            pass  # stopping goes on: the loop is closed either way
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class HeadsServer:
    """Serves ``owners``' heads from ``store`` (a Store or its Fence) over
    HTTP on ``host:port`` (port 0 picks a free one). ``start()`` runs it on a
    background thread; ``serve_forever()`` in the calling one.

    Args:
        store: the Store (or its ``Fence``) whose heads are served.
        owners: the owner name, or names, this server answers for.
        host: the address to bind. A non-loopback one needs ``token`` or
            ``ssl_context``, or ``insecure=True``.
        port: the port to bind (0: a free one, see `url`).
        token: the shared secret (str or bytes, at least
            `MIN_TOKEN_BYTES`). Every request must carry its MAC and
            every answer carries one bound to the request's nonce; a request
            without a valid one is refused with HTTP 401.
        ssl_context: serve HTTPS with this context (see
            `server_ssl_context`; mutual TLS if it requires client
            certificates).
        insecure: allow a non-loopback host with neither token nor TLS.
        allowed_hosts: extra names the ``Host`` header may carry (a DNS
            name clients use). Always allowed: the bound host, ``localhost``
            and the loopback addresses; any IP address when bound to a
            wildcard address. A request for another name is refused (421),
            which stops DNS rebinding from a browser.
        max_keys: the most keys one head query may ask for (more: 413).
        max_query_bytes: the largest head query body (more: 413).
        max_concurrent: requests read or answered at once; one more is
            refused at once with 503 ("busy") instead of queueing.
        max_connections: connections held at once, lowered to what the
            process's descriptor limit leaves (`agentsensus._net.listen_guard.connection_cap`);
            one more is answered 503 and closed as soon as it is accepted.
        header_timeout: seconds a connection may take to send a request's
            headers (also how long an idle keep-alive connection stays open).
        body_timeout: seconds a request may take to send its body.
    """

    def __init__(
        self,
        store: Union["Store", "Fence"],
        owners: Union[str, Iterable[str]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: Optional[Union[str, bytes]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        insecure: bool = False,
        allowed_hosts: Iterable[str] = (),
        max_keys: int = DEFAULT_MAX_KEYS,
        max_query_bytes: int = DEFAULT_MAX_QUERY_BYTES,
        max_concurrent: int = 32,
        max_connections: int = 256,
        header_timeout: float = 10.0,
        body_timeout: float = 10.0,
    ) -> None:
        self._fence: "Fence" = store.fence if hasattr(store, "fence") else store
        names = [owners] if isinstance(owners, str) else list(owners)
        if not names:
            raise ValueError("owners is empty: a heads server serves at least one owner")
        self.owners = frozenset(check_owner(o, "owners") for o in names)
        if MEMORY_OWNER in self.owners:
            raise ValueError(f"owner {MEMORY_OWNER!r} is reserved: a store answers its memory links itself")
        if not isinstance(host, str) or not host:
            raise ValueError(f"host must be a non-empty str, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int between 0 and 65535, got {port!r}")
        self._keys = auth.Keys(token) if token is not None else None
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise TypeError(f"ssl_context must be an ssl.SSLContext, got {type(ssl_context).__name__}")
        if not isinstance(insecure, bool):
            raise TypeError(f"insecure must be a bool, got {type(insecure).__name__}")
        refuse_open_host(
            host,
            self._keys is not None or ssl_context is not None or insecure,
            lacks="the server has no token and no TLS",
            exposes="read heads and values",
            remedy="Pass token=, ssl_context=, or insecure=True",
        )
        if isinstance(allowed_hosts, str):
            raise TypeError("allowed_hosts must be an iterable of names, not a single str")
        self.allowed_hosts = frozenset(_bare(h).lower() for h in allowed_hosts)
        self.max_keys = _count(max_keys, "max_keys")
        self.max_query_bytes = _count(max_query_bytes, "max_query_bytes")
        self.max_concurrent = _count(max_concurrent, "max_concurrent")
        self.max_connections = _count(max_connections, "max_connections")
        self.header_timeout = _positive(header_timeout, "header_timeout")
        self.body_timeout = _positive(body_timeout, "body_timeout")
        self.host = host
        self.port = port
        self._ssl = ssl_context
        self._seen = auth.SeenNonces()
        self._inflight = 0
        self._worker: Optional[ThreadPoolExecutor] = None
        self._runner: Optional[web.AppRunner] = None
        self._listener: Optional[asyncio.AbstractServer] = None
        self._loop: Optional[_LoopThread] = None

    @property
    def url(self) -> str:
        """The base URL, once started (a wildcard bind reads as loopback)."""
        if self._runner is None:
            raise Error("the heads server is not started")
        ip = _ip(self.host)
        host = self.host
        if ip is not None and ip.is_unspecified:
            host = "127.0.0.1" if ip.version == 4 else "::1"
        return f"{'https' if self._ssl is not None else 'http'}://{_url_host(host)}:{self.port}"

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_query_bytes)
        app.router.add_post("/v1/heads/{owner}", self._heads)
        app.router.add_get("/v1/value/{owner}", self._value)
        return app

    # -- request gate --------------------------------------------------------------

    def _host_ok(self, header: Optional[str]) -> bool:
        m = _HOST_RE.fullmatch(header or "")
        if m is None:
            return False
        name = _bare(m[1]).lower()
        port = int(m[2]) if m[2] else (443 if self._ssl is not None else 80)
        if port != self.port:
            return False
        if name in self.allowed_hosts or name == "localhost" or name == _bare(self.host).lower():
            return True
        ip, bound = _ip(name), _ip(self.host)
        return ip is not None and (ip.is_loopback or (bound is not None and bound.is_unspecified))

    def _gate(self, request: web.Request) -> bytes:
        """Checks every request before anything is looked up; returns its nonce."""
        if not self._host_ok(request.headers.get("Host")):
            _refuse(421, "this server does not answer for that Host")
        # Our client never sends Origin; a browser always does on these requests.
        if "Origin" in request.headers:
            _refuse(403, "requests from web pages are refused")
        # A custom header a page cannot send without a CORS preflight (which
        # this server never grants).
        nonce = auth.parse_nonce(request.headers.get(auth.H_NONCE))
        if nonce is None:
            _refuse(400, f"the {auth.H_NONCE} header (32 hex digits) is missing or malformed")
        return nonce

    def _authenticate(self, request: web.Request, op: bytes, owner: str, nonce: bytes, digest: Optional[bytes]) -> None:
        """With a token: the request's MAC, time and nonce, from its headers
        alone (``digest``: of its payload; the body, unread yet, must match
        it). A refusal closes the connection: an unread body stays unread."""
        if self._keys is None:
            return
        why = auth.verify_request(
            self._keys,
            self._seen,
            op,
            owner,
            nonce,
            digest,
            request.headers.get(auth.H_TIME),
            request.headers.get(auth.H_MAC),
        )
        if why == "full":
            _refuse(503, "busy: too many requests in the replay window", close=True)
        if why is not None:  # unauthenticated or replayed: one answer for both
            _refuse(401, _UNAUTHENTICATED, close=True)

    def _sealed(
        self, op: bytes, owner: str, nonce: bytes, digest: bytes, version: bytes, body: bytes
    ) -> dict[str, str]:
        if self._keys is None:
            return {}
        return {auth.H_MAC: auth.answer_mac(self._keys, op, owner, nonce, digest, version, body).hex()}

    # -- handlers ------------------------------------------------------------------

    async def _heads(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._heads_checked(request)
        except _Refused as r:
            return self._refusal(r)

    async def _value(self, request: web.Request) -> web.StreamResponse:
        try:
            return self._value_checked(request)
        except _Refused as r:
            return self._refusal(r)

    @staticmethod
    def _refusal(r: _Refused) -> web.Response:
        resp = web.Response(status=r.status, text=r.text)
        if r.close:
            resp.force_close()
        return resp

    async def _heads_checked(self, request: web.Request) -> web.Response:
        nonce = self._gate(request)
        # aiohttp reads a missing Content-Type as octet-stream: require the header.
        if "Content-Type" not in request.headers or request.content_type != _OCTET:
            _refuse(415, f"the body must be {_OCTET}")
        length = request.content_length
        if length is None:
            _refuse(411, "Content-Length is required", close=True)
        if length > self.max_query_bytes:
            _refuse(413, f"the query is {length} bytes; the limit is {self.max_query_bytes}", close=True)
        owner = request.match_info["owner"]
        claimed = auth.parse_digest(request.headers.get(auth.H_DIGEST))
        self._authenticate(request, _OP_HEADS, owner, nonce, claimed)
        if self._inflight >= self.max_concurrent:
            _refuse(503, "busy: too many queries at once", close=True)
        self._inflight += 1
        try:
            try:
                query = await asyncio.wait_for(request.read(), self.body_timeout)
            except asyncio.TimeoutError:
                _refuse(408, f"the body did not arrive within {self.body_timeout:g} s", close=True)
            n = _query_keys(query)
            if n is not None and n > self.max_keys:
                _refuse(413, f"the query asks for {n} keys; the limit is {self.max_keys}")
            if len(query) > _HEAVY_BYTES:
                assert self._worker is not None
                loop = asyncio.get_running_loop()
                answer, headers = await loop.run_in_executor(
                    self._worker, self._answer_heads, owner, nonce, query, claimed
                )
            else:
                answer, headers = self._answer_heads(owner, nonce, query, claimed)
        finally:
            self._inflight -= 1
        return web.Response(body=answer, content_type=_OCTET, headers=headers)

    def _answer_heads(
        self, owner: str, nonce: bytes, query: bytes, claimed: Optional[bytes]
    ) -> tuple[bytes, dict[str, str]]:
        digest = b""
        if self._keys is not None:
            digest = auth.digest(query)
            if claimed is None or not hmac.compare_digest(digest, claimed):
                _refuse(401, _UNAUTHENTICATED)  # the body is not the one the MAC was made for
        if owner not in self.owners:
            _refuse(404, _NOT_FOUND)
        try:
            # Engine work with the GIL released.
            answer = self._fence.answer(owner, query)
        except ValueError as e:
            _refuse(400, str(e))
        except Error as e:
            _refuse(503, str(e))
        return answer, self._sealed(_OP_HEADS, owner, nonce, digest, b"", answer)

    def _value_checked(self, request: web.Request) -> web.Response:
        nonce = self._gate(request)
        if request.content_length:
            _refuse(400, "a value request has no body", close=True)
        owner = request.match_info["owner"]
        raw = request.query.get("key", "")
        digest = auth.digest(auth.utf8(raw))
        self._authenticate(request, _OP_VALUE, owner, nonce, digest)
        if owner not in self.owners:
            _refuse(404, _NOT_FOUND)
        try:
            key = check_key(raw)
        except (TypeError, ValueError) as e:
            _refuse(400, str(e))
        try:
            if self._fence.owner(key) != owner:
                _refuse(404, _NOT_FOUND)
            version = self._fence.head(key)
            value = self._fence.value(key, version)
        except KeyError:
            # A record of this store, asked for as memory:<id>@<owner>: the
            # record that stands for it now and its text.
            memory = self._fence.memory_value(owner, key)
            if memory is None:
                _refuse(404, _NOT_FOUND)
            version, value = memory
        v = str(version)
        headers = {"X-Version": v, **self._sealed(_OP_VALUE, owner, nonce, digest, v.encode(), value)}
        return web.Response(body=value, content_type=_OCTET, headers=headers)

    # -- lifecycle -----------------------------------------------------------------

    async def _start(self) -> None:
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentsensus-heads-heavy")
        # aiohttp closes a connection that has not sent a whole request head
        # within keepalive_timeout of connecting or of its last answer,
        # however slowly it trickles bytes: that is the header timeout.
        # shutdown_timeout: stop() waits this long for requests in flight
        # (a slow body among them), then cancels them. lingering_time=0: a
        # body left unread by a refusal is not read to be thrown away (aiohttp
        # would spend up to 10 s reading it); the connection is closed.
        self._runner = web.AppRunner(
            self._app(),
            access_log=None,
            keepalive_timeout=self.header_timeout,
            shutdown_timeout=2.0,
            lingering_time=0,
        )
        await self._runner.setup()
        # Listened on here rather than by a TCPSite: the factory refuses a
        # connection past the cap before it holds a descriptor for long, so
        # accept() never runs out of them (listen_guard).
        server = self._runner.server
        assert server is not None
        cap = connection_cap(self.max_connections)
        self._listener = await asyncio.get_running_loop().create_server(
            capped(server, lambda: len(server.connections), cap),
            self.host,
            self.port,
            ssl=self._ssl,
            backlog=ACCEPT_BATCH,
        )
        sockets = self._listener.sockets
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None

    def start(self) -> "HeadsServer":
        """Starts serving on a background thread; returns self."""
        if self._loop is not None:
            raise Error("the heads server is already started")
        self._loop = _LoopThread("agentsensus-heads-server")
        try:
            self._loop.run(self._start())
        except BaseException:
            try:
                self._loop.run(self._stop(), timeout=10)
            finally:
                self._loop.stop()
                self._loop = None
                self._runner = None
            raise
        return self

    def stop(self) -> None:
        """Stops serving; calling it again does nothing."""
        loop, self._loop = self._loop, None
        if loop is not None:
            try:
                loop.run(self._stop(), timeout=10)
            finally:
                loop.stop()
                self._runner = None

    def serve_forever(self, ready: Optional[Callable[[str], None]] = None) -> None:
        """Serves in this thread until SIGINT or SIGTERM."""

        async def main() -> None:
            await self._start()
            try:
                if ready is not None:
                    ready(self.url)
                done = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, done.set)
                await done.wait()
            finally:
                await self._stop()

        asyncio.run(main())

    def __enter__(self) -> "HeadsServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class HeadsClient:
    """Asks owners for their heads over HTTP(S). Use it as ``heads=`` of
    ``Fence.check`` and ``Fence.guard``. Each check asks every owner once,
    all in parallel, each with ``timeout`` seconds; keep-alive connections
    are reused.

    Args:
        endpoints: each owner's server base URL (``http://`` or ``https://``).
        timeout: seconds each owner has to answer.
        token: the shared secret of the owners' servers: one for all, or a
            mapping owner -> token (every owner of ``endpoints`` then needs
            one). Requests are signed, and an answer whose MAC does not bind
            it to this request (no token at the server, a replayed answer)
            is refused with `AnswerNotAuthentic`: the check is not
            current and its reason names the owner.
        ssl_context: the TLS context for ``https://`` endpoints (see
            `client_ssl_context`; with a client certificate for mutual
            TLS). Without it, ``https://`` verifies against the system's CAs.
        insecure: allow a non-loopback ``http://`` endpoint without a token
            (nothing then proves where its answers come from).
    """

    def __init__(
        self,
        endpoints: Mapping[str, str],
        *,
        timeout: float = 2.0,
        token: Optional[Union[str, bytes, Mapping[str, Union[str, bytes]]]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
        insecure: bool = False,
    ) -> None:
        if not isinstance(endpoints, Mapping):
            raise TypeError(f"endpoints must be a mapping owner -> URL, got {type(endpoints).__name__}")
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise TypeError(f"ssl_context must be an ssl.SSLContext, got {type(ssl_context).__name__}")
        if not isinstance(insecure, bool):
            raise TypeError(f"insecure must be a bool, got {type(insecure).__name__}")
        self.endpoints: dict[str, str] = {}
        self._keys: dict[str, auth.Keys] = {}
        shared = auth.Keys(token) if isinstance(token, (str, bytes, bytearray)) else None
        if token is not None and shared is None and not isinstance(token, Mapping):
            raise TypeError(f"token must be a str, bytes or a mapping owner -> token, got {type(token).__name__}")
        for owner, url in endpoints.items():
            check_owner(owner, "an endpoints owner")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"endpoint of {owner!r} must be an http(s) URL, got {url!r}")
            self.endpoints[owner] = url.rstrip("/")
            if shared is not None:
                self._keys[owner] = shared
            elif isinstance(token, Mapping):
                if owner not in token:
                    raise ValueError(f"token is a mapping without an entry for owner {owner!r}")
                self._keys[owner] = auth.Keys(token[owner], f"the token of {owner!r}")
            https = url.startswith("https://")
            if ssl_context is not None and not https:
                raise ValueError(f"ssl_context is given but the endpoint of {owner!r} is not https: {url!r}")
            host = urlsplit(url).hostname or ""
            if not https and owner not in self._keys and not _is_loopback(host) and not insecure:
                raise ValueError(
                    f"endpoint of {owner!r} ({url}) is not on a loopback address and the client has no "
                    "token: nothing would prove who answers. Pass token=, use https, or insecure=True"
                )
        if isinstance(token, Mapping):
            extra = sorted(set(token) - set(self.endpoints))
            if extra:
                raise ValueError(f"token has entries for owners without an endpoint: {extra!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self._ssl = ssl_context
        self._lock = threading.Lock()
        self._loop: Optional[_LoopThread] = None
        self._session: Optional[aiohttp.ClientSession] = None

    def _running(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                loop = _LoopThread("agentsensus-heads-client")

                async def make() -> aiohttp.ClientSession:
                    return aiohttp.ClientSession(
                        timeout=aiohttp.ClientTimeout(total=self.timeout),
                        connector=aiohttp.TCPConnector(keepalive_timeout=_CLIENT_KEEPALIVE),
                    )

                self._session = loop.run(make())
                self._loop = loop
            return self._loop

    def _request_kwargs(self) -> dict[str, Any]:
        return {} if self._ssl is None else {"ssl": self._ssl}

    def _headers(self, op: bytes, owner: str, nonce: bytes, payload: bytes) -> dict[str, str]:
        headers = {auth.H_NONCE: nonce.hex()}
        keys = self._keys.get(owner)
        if keys is not None:
            headers.update(auth.sign_request(keys, op, owner, nonce, payload))
        return headers

    def _verify(
        self,
        r: "aiohttp.ClientResponse",
        owner: str,
        url: str,
        op: bytes,
        nonce: bytes,
        payload: bytes,
        version: bytes,
        body: bytes,
    ) -> None:
        keys = self._keys.get(owner)
        if keys is None:
            return
        header = r.headers.get(auth.H_MAC)
        if not auth.answer_is_authentic(keys, op, owner, nonce, auth.digest(payload), version, body, header):
            why = "it carries no MAC" if not header else "its MAC does not match this request"
            raise AnswerNotAuthentic(
                f"owner {owner!r} at {url} sent an answer that failed verification ({why}): "
                "the server does not hold the token, or the answer is replayed; it was not used"
            )

    @staticmethod
    def _status_error(owner: str, url: str, status: int, body: bytes) -> OwnerUnavailable:
        text = body.decode("utf-8", "replace")[:200]
        hint = " (the token is missing or does not match the server's)" if status == 401 else ""
        return OwnerUnavailable(f"owner {owner!r} at {url} answered HTTP {status}: {text}{hint}")

    async def _post(self, owner: str, query: bytes) -> bytes:
        url = self.endpoints.get(owner)
        if url is None:
            raise OwnerUnavailable(f"no endpoint for owner {owner!r}")
        assert self._session is not None
        nonce = secrets.token_bytes(auth.NONCE_BYTES)
        headers = {"Content-Type": _OCTET, **self._headers(_OP_HEADS, owner, nonce, query)}
        try:
            async with self._session.post(
                f"{url}/v1/heads/{quote(owner, safe='')}", data=query, headers=headers, **self._request_kwargs()
            ) as r:
                body = await r.read()
                if r.status != 200:
                    raise self._status_error(owner, url, r.status, body)
                self._verify(r, owner, url, _OP_HEADS, nonce, query, b"", body)
                return body
        except asyncio.TimeoutError:
            raise OwnerUnavailable(f"owner {owner!r} at {url} did not answer within {self.timeout:g} s") from None
        except aiohttp.ClientError as e:
            raise OwnerUnavailable(f"owner {owner!r} at {url} is unreachable: {type(e).__name__}: {e}") from None

    async def _gather(self, queries: Mapping[str, bytes]) -> dict[str, Union[bytes, BaseException]]:
        owners = list(queries)
        replies = await asyncio.gather(*(self._post(o, queries[o]) for o in owners), return_exceptions=True)
        return dict(zip(owners, replies))

    def ask_encoded(self, queries: Mapping[str, bytes]) -> dict[str, Union[bytes, BaseException]]:
        """Sends each owner its encoded query, all in parallel; returns each
        owner's encoded answer, or the error that kept it from answering
        (`OwnerUnavailable`; `AnswerNotAuthentic` for an answer
        that failed verification)."""
        if not queries:
            return {}
        loop = self._running()
        return loop.run(self._gather(queries), timeout=self.timeout + 5)  # type: ignore[no-any-return]

    def __call__(self, owner: str, keys: list[str]) -> dict[str, int]:
        """``heads(owner, keys)``: the owner's current head of each key it
        knows. Raises ``OwnerUnavailable`` when it does not answer (or
        ``AnswerNotAuthentic`` when its answer fails verification)."""
        owner = check_owner(owner)
        names = sorted({check_key(k, "keys item") for k in keys})
        query = bytes(_core.Lineage.encode_query([(k, 0) for k in names]))
        reply = self.ask_encoded({owner: query})[owner]
        if isinstance(reply, BaseException):
            raise reply
        heads = _decode_heads(reply, len(names))
        return {k: h for k, h in zip(names, heads) if h}

    def fetch(self, owner: str, key: str) -> tuple[int, bytes]:
        """The head version and value of ``key`` from its owner (what a
        replan reads before deriving again). Raises ``KeyError`` if the
        owner has no such key, ``OwnerUnavailable`` if it does not answer,
        ``AnswerNotAuthentic`` if its answer fails verification."""
        owner = check_owner(owner)
        key = check_key(key)
        url = self.endpoints.get(owner)
        if url is None:
            raise OwnerUnavailable(f"no endpoint for owner {owner!r}")
        payload = auth.utf8(key)

        async def get() -> tuple[int, bytes]:
            assert self._session is not None
            nonce = secrets.token_bytes(auth.NONCE_BYTES)
            try:
                async with self._session.get(
                    f"{url}/v1/value/{quote(owner, safe='')}",
                    params={"key": key},
                    headers=self._headers(_OP_VALUE, owner, nonce, payload),
                    **self._request_kwargs(),
                ) as r:
                    body = await r.read()
                    if r.status == 404:
                        raise KeyError(f"owner {owner!r} at {url} has no key {key!r}")
                    if r.status != 200:
                        raise self._status_error(owner, url, r.status, body)
                    v = r.headers.get("X-Version", "")
                    self._verify(r, owner, url, _OP_VALUE, nonce, payload, v.encode(), body)
                    if not v.isdigit():
                        raise OwnerUnavailable(f"owner {owner!r} at {url} sent no valid X-Version")
                    return int(v), body
            except asyncio.TimeoutError:
                raise OwnerUnavailable(f"owner {owner!r} at {url} did not answer within {self.timeout:g} s") from None
            except aiohttp.ClientError as e:
                raise OwnerUnavailable(f"owner {owner!r} at {url} is unreachable: {type(e).__name__}: {e}") from None

        return self._running().run(get(), timeout=self.timeout + 5)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Closes connections and the client's loop; calling it again does nothing."""
        with self._lock:
            loop, self._loop = self._loop, None
            session, self._session = self._session, None
        if loop is not None:
            try:
                if session is not None:
                    loop.run(session.close(), timeout=5)
            finally:
                loop.stop()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "HeadsClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _decode_heads(answer: bytes, n: int) -> list[int]:
    """Head versions of an encoded answer of n entries (0: unknown)."""
    try:
        return [int(head) for head, _same in _core.Lineage.decode_answer(answer, n)]
    except ValueError:
        raise OwnerUnavailable("malformed heads answer, or one of the wrong length") from None


def main(argv: Optional[list[str]] = None, prog: str = "python -m agentsensus.planfence.transport") -> int:
    """Serves the owners' heads from the store at PATH until SIGINT/SIGTERM.
    Refusals (a missing store, a bad token file, a non-loopback host without
    token or TLS) are one line on stderr and exit status 2."""
    from ..store import Store

    ap = argparse.ArgumentParser(prog=prog, description=main.__doc__)
    ap.add_argument("path")
    ap.add_argument("--owner", action="append", required=True, help="an owner to serve (repeatable)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token-file", help="a file (mode 600) holding the shared token")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate chain (PEM)")
    ap.add_argument("--tls-key", help="the private key of --tls-cert (PEM)")
    ap.add_argument("--tls-client-ca", help="mutual TLS: require client certificates signed by this CA")
    ap.add_argument("--insecure", action="store_true", help="allow a non-loopback host with no token and no TLS")
    ap.add_argument("--max-keys", type=int, default=DEFAULT_MAX_KEYS, help="keys per head query")
    ap.add_argument("--max-concurrent", type=int, default=32, help="queries read or answered at once")
    ap.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        help="seconds a connection may take to send a request's headers (default 10)",
    )
    ap.add_argument(
        "--max-connections",
        type=int,
        default=256,
        help="connections held at once (lowered to what the descriptor limit leaves)",
    )
    a = ap.parse_args(argv)
    try:
        token = read_token_file(a.token_file) if a.token_file else None
        if a.tls_client_ca and not a.tls_cert:
            raise ValueError("--tls-client-ca needs --tls-cert and --tls-key")
        ctx = None
        if a.tls_cert or a.tls_key:
            if not (a.tls_cert and a.tls_key):
                raise ValueError("--tls-cert and --tls-key go together")
            ctx = server_ssl_context(a.tls_cert, a.tls_key, client_ca=a.tls_client_ca)
        with Store(a.path, create=False) as store:
            server = HeadsServer(
                store,
                a.owner,
                host=a.host,
                port=a.port,
                token=token,
                ssl_context=ctx,
                insecure=a.insecure,
                max_keys=a.max_keys,
                max_concurrent=a.max_concurrent,
                max_connections=a.max_connections,
                header_timeout=a.header_timeout,
            )
            server.serve_forever(lambda url: print(f"listening {url}", flush=True))
    except (Error, ValueError, TypeError, OSError, ssl.SSLError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
