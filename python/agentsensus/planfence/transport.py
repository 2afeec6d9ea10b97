"""The Planfence heads transport: owners in other processes, over HTTP (aiohttp).

:class:`HeadsServer` serves one or more owners' heads from a store;
:class:`HeadsClient` asks each owner once per check, all owners in parallel,
with a timeout. A failure (timeout, refused connection, HTTP error, unknown
owner) is reported per owner and blocks the action with a reason naming the
owner: an unreachable owner never lets a stale plan through.

Wire: ``POST /v1/heads/{owner}`` with the encoded head query (see
``cpp/heads_codec.hpp``) as an ``application/octet-stream`` body; the answer
is the encoded reply. ``GET /v1/value/{owner}?key=K`` returns the head value
of ``K`` with its version in the ``X-Version`` header (what a replan fetches).

Run an owner's server as a process::

    python -m agentsensus.heads_transport PATH --owner NAME [--port N]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Union

from .. import _core
from ..errors import Error
from .fence import check_key
from ..validation import check_owner

if TYPE_CHECKING:
    from .fence import Fence
    from ..store import Store

try:
    import aiohttp
    from aiohttp import web
except ImportError as e:  # pragma: no cover - only without the extra
    raise ImportError("the heads transport needs aiohttp: pip install 'agentsensus[fence]'") from e

__all__ = ["HeadsServer", "HeadsClient", "OwnerUnavailable"]

_OCTET = "application/octet-stream"
# A head query is small (about 7 bytes per key); refuse anything absurd.
_MAX_QUERY_BYTES = 8 << 20


class OwnerUnavailable(Error):
    """An owner did not answer (timeout, refused connection, HTTP error)."""


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
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class HeadsServer:
    """Serves ``owners``' heads from ``store`` (a Store or its Fence) over
    HTTP on ``host:port`` (port 0 picks a free one). ``start()`` runs it on a
    background thread; ``serve_forever()`` in the calling one."""

    def __init__(
        self,
        store: Union["Store", "Fence"],
        owners: Union[str, Iterable[str]],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._fence: "Fence" = store.fence if hasattr(store, "fence") else store
        names = [owners] if isinstance(owners, str) else list(owners)
        if not names:
            raise ValueError("owners is empty: a heads server serves at least one owner")
        self.owners = frozenset(check_owner(o, "owners") for o in names)
        if not isinstance(host, str) or not host:
            raise ValueError(f"host must be a non-empty str, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an int between 0 and 65535, got {port!r}")
        self.host = host
        self.port = port
        self._runner: Optional[web.AppRunner] = None
        self._loop: Optional[_LoopThread] = None

    @property
    def url(self) -> str:
        """The base URL, once started."""
        if self._runner is None:
            raise Error("the heads server is not started")
        return f"http://{self.host}:{self.port}"

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=_MAX_QUERY_BYTES)
        app.router.add_post("/v1/heads/{owner}", self._heads)
        app.router.add_get("/v1/value/{owner}", self._value)
        return app

    def _owner(self, request: web.Request) -> str:
        owner = request.match_info["owner"]
        if owner not in self.owners:
            raise web.HTTPNotFound(text=f"this server does not serve owner {owner!r}")
        return owner

    async def _heads(self, request: web.Request) -> web.Response:
        owner = self._owner(request)
        query = await request.read()
        try:
            # Microseconds of engine work with the GIL released: no thread hop.
            answer = self._fence.answer(owner, query)
        except ValueError as e:
            raise web.HTTPBadRequest(text=str(e))
        except Error as e:
            raise web.HTTPServiceUnavailable(text=str(e))
        return web.Response(body=answer, content_type=_OCTET)

    async def _value(self, request: web.Request) -> web.Response:
        owner = self._owner(request)
        try:
            key = check_key(request.query.get("key", ""))
        except (TypeError, ValueError) as e:
            raise web.HTTPBadRequest(text=str(e))
        try:
            if self._fence.owner(key) != owner:
                raise web.HTTPNotFound(text=f"{key!r} is not owned by {owner!r}")
            version = self._fence.head(key)
            value = self._fence.value(key, version)
        except KeyError as e:
            raise web.HTTPNotFound(text=str(e))
        return web.Response(body=value, content_type=_OCTET, headers={"X-Version": str(version)})

    async def _start(self) -> None:
        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        # aiohttp types _server as AbstractServer; it is an asyncio.Server, which has the sockets (port 0).
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> "HeadsServer":
        """Starts serving on a background thread; returns self."""
        if self._loop is not None:
            raise Error("the heads server is already started")
        self._loop = _LoopThread("agentsensus-heads-server")
        try:
            self._loop.run(self._start())
        except BaseException:
            self._loop.stop()
            self._loop = None
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
            if ready is not None:
                ready(self.url)
            done = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, done.set)
            await done.wait()
            await self._stop()

        asyncio.run(main())

    def __enter__(self) -> "HeadsServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class HeadsClient:
    """Asks owners for their heads over HTTP: ``endpoints`` maps each owner
    to its server's base URL. Use it as ``heads=`` of ``Fence.check`` and
    ``Fence.guard``. Each check asks every owner once, all in parallel, each
    with ``timeout`` seconds; keep-alive connections are reused."""

    def __init__(self, endpoints: Mapping[str, str], *, timeout: float = 2.0) -> None:
        if not isinstance(endpoints, Mapping):
            raise TypeError(f"endpoints must be a mapping owner -> URL, got {type(endpoints).__name__}")
        self.endpoints: dict[str, str] = {}
        for owner, url in endpoints.items():
            check_owner(owner, "an endpoints owner")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"endpoint of {owner!r} must be an http(s) URL, got {url!r}")
            self.endpoints[owner] = url.rstrip("/")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        self._loop: Optional[_LoopThread] = None
        self._session: Optional[aiohttp.ClientSession] = None

    def _running(self) -> _LoopThread:
        with self._lock:
            if self._loop is None:
                loop = _LoopThread("agentsensus-heads-client")

                async def make() -> aiohttp.ClientSession:
                    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))

                self._session = loop.run(make())
                self._loop = loop
            return self._loop

    async def _post(self, owner: str, query: bytes) -> bytes:
        url = self.endpoints.get(owner)
        if url is None:
            raise OwnerUnavailable(f"no endpoint for owner {owner!r}")
        assert self._session is not None
        try:
            async with self._session.post(f"{url}/v1/heads/{owner}", data=query, headers={"Content-Type": _OCTET}) as r:
                body = await r.read()
                if r.status != 200:
                    text = body.decode("utf-8", "replace")[:200]
                    raise OwnerUnavailable(f"owner {owner!r} at {url} answered HTTP {r.status}: {text}")
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
        owner's encoded answer, or the error that kept it from answering."""
        if not queries:
            return {}
        loop = self._running()
        return loop.run(self._gather(queries), timeout=self.timeout + 5)  # type: ignore[no-any-return]

    def __call__(self, owner: str, keys: list[str]) -> dict[str, int]:
        """``heads(owner, keys)`` of API.md: the owner's current head of each
        key it knows. Raises ``OwnerUnavailable`` when it does not answer."""
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
        replan reads before deriving again)."""
        owner = check_owner(owner)
        key = check_key(key)
        url = self.endpoints.get(owner)
        if url is None:
            raise OwnerUnavailable(f"no endpoint for owner {owner!r}")

        async def get() -> tuple[int, bytes]:
            assert self._session is not None
            try:
                async with self._session.get(f"{url}/v1/value/{owner}", params={"key": key}) as r:
                    body = await r.read()
                    if r.status == 404:
                        raise KeyError(body.decode("utf-8", "replace"))
                    if r.status != 200:
                        raise OwnerUnavailable(f"owner {owner!r} at {url} answered HTTP {r.status}")
                    return int(r.headers["X-Version"]), body
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
    """Head versions of an encoded answer (0: unknown)."""
    if len(answer) < 2 or answer[0] != 0x01:
        raise OwnerUnavailable("malformed heads answer")
    pos, out = 1, []

    def varint() -> int:
        nonlocal pos
        v, shift = 0, 0
        while True:
            if pos >= len(answer) or shift > 63:
                raise OwnerUnavailable("malformed heads answer")
            c = answer[pos]
            pos += 1
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7

    if varint() != n:
        raise OwnerUnavailable("heads answer has the wrong length")
    for _ in range(n):
        out.append(varint() >> 1)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m agentsensus.heads_transport PATH --owner NAME``: serves
    the owner's heads from the store at PATH until SIGINT/SIGTERM."""
    from ..store import Store

    ap = argparse.ArgumentParser(prog="python -m agentsensus.heads_transport", description=main.__doc__)
    ap.add_argument("path")
    ap.add_argument("--owner", action="append", required=True, help="an owner to serve (repeatable)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args(argv)
    with Store(a.path, create=False) as store:
        server = HeadsServer(store, a.owner, host=a.host, port=a.port)
        server.serve_forever(lambda url: print(f"listening {url}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
