"""The shared-secret authentication of the heads transport (standard library only).

A token shared by an owner's server and its clients is turned into two keys,
one per direction, so that a MAC made for a request can never pass as an
answer's (nor the reverse)::

    request key = HMAC-SHA256(token, "agentsensus-heads-v1 request")
    answer key  = HMAC-SHA256(token, "agentsensus-heads-v1 answer")

Every request carries a fresh 16-byte client nonce, the client's clock, the
SHA-256 ``digest`` of its payload (the query body, or the key asked for) and
``HMAC(request key, op | owner | time | nonce | digest)``; every answer
carries ``HMAC(answer key, op | owner | nonce | digest | version | answer)``.
Fields are length-prefixed, so no two field lists make the same message.
The request MAC leaves the body out (its digest stands for it) so that the
server can refuse a request from a client without the token as soon as the
headers are in, without reading a body of megabytes. An
answer is therefore good for one request only: a server without the token
cannot make one (spoofing, a squatter on the port), and a recorded one does
not verify against a new nonce (replay). The server refuses a request whose
time is more than `MAX_CLOCK_SKEW` seconds off, or whose nonce it has
seen within that window (a replayed request). What the MAC does not give:
secrecy of the bytes on the wire (that is TLS's part) and protection from
a holder of the token (every holder may act as client or server).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
import time
from collections import deque
from typing import Any, Optional, Union

__all__ = ["MIN_TOKEN_BYTES", "MAX_CLOCK_SKEW", "read_token_file", "new_token"]

#: A shorter token is refused: it could be guessed.
MIN_TOKEN_BYTES = 16
#: Seconds a request's clock may differ from the server's.
MAX_CLOCK_SKEW = 60.0

NONCE_BYTES = 16
H_NONCE = "X-Agentsensus-Nonce"
H_TIME = "X-Agentsensus-Time"
H_MAC = "X-Agentsensus-Mac"
H_DIGEST = "X-Agentsensus-Digest"
_LABEL = b"agentsensus-heads-v1"

Token = Union[str, bytes]


def new_token() -> str:
    """A fresh random token (32 bytes of ``secrets``, URL-safe text)."""
    return secrets.token_urlsafe(32)


def token_bytes(token: Any, name: str = "token") -> bytes:
    """``token`` as bytes, refused if it is not str/bytes or is too short."""
    if isinstance(token, str):
        data = token.encode("utf-8")
    elif isinstance(token, (bytes, bytearray)):
        data = bytes(token)
    else:
        raise TypeError(f"{name} must be a str or bytes, got {type(token).__name__}")
    if len(data) < MIN_TOKEN_BYTES:
        raise ValueError(
            f"{name} is {len(data)} bytes; at least {MIN_TOKEN_BYTES} are needed "
            "(agentsensus.planfence.transport.new_token() makes one)"
        )
    return data


def read_token_file(path: Union[str, "os.PathLike[str]"]) -> bytes:
    """The token stored in the file at ``path`` (surrounding whitespace
    dropped). The file must not be readable by other users (``chmod 600``):
    whoever reads the token can answer for the owner."""
    p = os.fspath(path)
    try:
        mode = os.stat(p).st_mode
        with open(p, "rb") as f:
            data = f.read(1 << 16)
    except OSError as e:
        raise ValueError(f"cannot read the token file {p}: {e.strerror or e}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"the token file {p} is open to other users (mode {stat.filemode(mode)}); chmod 600 it")
    return token_bytes(data.strip(), f"the token in {p}")


class Keys:
    """The two direction keys derived from one token."""

    __slots__ = ("request", "answer")

    def __init__(self, token: Any, name: str = "token") -> None:
        t = token_bytes(token, name)
        self.request = hmac.new(t, _LABEL + b" request", hashlib.sha256).digest()
        self.answer = hmac.new(t, _LABEL + b" answer", hashlib.sha256).digest()


def mac(key: bytes, *fields: bytes) -> bytes:
    """HMAC-SHA256 over length-prefixed ``fields``."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in fields:
        h.update(len(f).to_bytes(8, "big"))
        h.update(f)
    return h.digest()


def utf8(s: str) -> bytes:
    # Names that came off the wire may hold lone surrogates; they must not
    # raise here (the MAC then fails, which refuses them).
    return s.encode("utf-8", "surrogatepass")


def digest(payload: bytes) -> bytes:
    """The SHA-256 of a request's payload."""
    return hashlib.sha256(payload).digest()


def sign_request(
    keys: Keys, op: bytes, owner: str, nonce: bytes, payload: bytes, now: Optional[float] = None
) -> dict[str, str]:
    """The headers that authenticate one request (dated ``now``, default the clock)."""
    t = str(int(time.time() if now is None else now))
    d = digest(payload)
    m = mac(keys.request, op, utf8(owner), t.encode(), nonce, d)
    return {H_TIME: t, H_DIGEST: d.hex(), H_MAC: m.hex()}


def answer_mac(
    keys: Keys, op: bytes, owner: str, nonce: bytes, payload_digest: bytes, version: bytes, body: bytes
) -> bytes:
    """The MAC that binds an answer to its request."""
    return mac(keys.answer, op, utf8(owner), nonce, payload_digest, version, body)


def answer_is_authentic(
    keys: Keys,
    op: bytes,
    owner: str,
    nonce: bytes,
    payload_digest: bytes,
    version: bytes,
    body: bytes,
    header: Optional[str],
) -> bool:
    """Whether ``header`` is the answer MAC for this request (constant time)."""
    if not header:
        return False
    try:
        got = bytes.fromhex(header)
    except ValueError:
        return False
    return hmac.compare_digest(got, answer_mac(keys, op, owner, nonce, payload_digest, version, body))


def parse_digest(header: Optional[str]) -> Optional[bytes]:
    """The payload digest of its header (64 hex digits), or ``None``."""
    if header is None or len(header) != 64:
        return None
    try:
        return bytes.fromhex(header)
    except ValueError:
        return None


def parse_nonce(header: Optional[str]) -> Optional[bytes]:
    """The request nonce of its header (32 hex digits), or ``None``."""
    if header is None or len(header) != 2 * NONCE_BYTES:
        return None
    try:
        return bytes.fromhex(header)
    except ValueError:
        return None


class SeenNonces:
    """Nonces of accepted requests, kept while their time could still pass
    the skew check, so a replayed request is refused. Bounded: when full,
    ``add`` refuses (the server answers "busy"), never forgets early."""

    def __init__(self, cap: int = 1 << 18) -> None:
        self.cap = cap
        self._expiry: dict[bytes, float] = {}
        self._order: deque[tuple[float, bytes]] = deque()
        self._lock = threading.Lock()  # heavy queries verify on a worker thread

    def add(self, nonce: bytes, now: float) -> Optional[str]:
        """Records ``nonce``; returns why it is refused, or ``None``."""
        with self._lock:
            while self._order and self._order[0][0] <= now:
                _, old = self._order.popleft()
                self._expiry.pop(old, None)
            if nonce in self._expiry:
                return "replayed"
            if len(self._expiry) >= self.cap:
                return "full"
            # A request dated up to MAX_CLOCK_SKEW ahead stays acceptable until
            # then plus the skew: keep its nonce that long.
            until = now + 2 * MAX_CLOCK_SKEW
            self._expiry[nonce] = until
            self._order.append((until, nonce))
            return None


def verify_request(
    keys: Keys,
    seen: SeenNonces,
    op: bytes,
    owner: str,
    nonce: bytes,
    payload_digest: Optional[bytes],
    t: Optional[str],
    m: Optional[str],
) -> Optional[str]:
    """Checks one request's time, MAC and nonce from its headers alone (the
    body is checked against ``payload_digest`` once read); returns why it is
    refused ("unauthenticated", "replayed", "full"), or ``None`` if it is good."""
    if payload_digest is None or t is None or m is None or not t.isdigit() or len(t) > 12:
        return "unauthenticated"
    now = time.time()
    try:
        got = bytes.fromhex(m)
    except ValueError:
        return "unauthenticated"
    want = mac(keys.request, op, utf8(owner), t.encode(), nonce, payload_digest)
    if not hmac.compare_digest(got, want):
        return "unauthenticated"
    if abs(now - int(t)) > MAX_CLOCK_SKEW:
        return "unauthenticated"
    return seen.add(nonce, now)
