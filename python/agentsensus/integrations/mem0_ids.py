"""The mem0 adapter's memory ids: one id per (record, owner), not guessable.

Two owners who say the same words share one record (the store's consensus),
but each holds its own memory of it, so an id names the pair. The id is the
pair sealed under a per-store secret: 16 bytes (the record id, and a tag of
the owner's name keyed by the secret) through a keyed four-round Feistel
permutation of HMAC-SHA256, shown as a UUID string as mem0's are. Decoding
gives the record id and the owner's tag back; an id is accepted only when
that tag is the tag of an owner of the record, so an id cannot be made from a
record id without the secret, and an id of one owner's memory never reaches
another's. The secret is 32 random bytes in ``mem0-ids.key`` inside the
store's directory, made once (the first process to link it wins), so ids
stay the same across reopens. Nothing here touches the store's data.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import uuid
from typing import Optional

__all__ = ["KEY_FILE", "IdCodec", "load_key"]

KEY_FILE = "mem0-ids.key"
_ROUNDS = 4


def load_key(directory: str) -> bytes:
    """The store's id secret, made (atomically) when the directory has none."""
    path = os.path.join(directory, KEY_FILE)
    try:
        with open(path, "rb") as f:
            return _parse_key(f.read(), path)
    except FileNotFoundError:
        pass
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    with open(tmp, "wb") as f:
        f.write(secrets.token_hex(32).encode("ascii") + b"\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # fails when another process made it first: theirs is the key
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    with open(path, "rb") as f:
        return _parse_key(f.read(), path)


def _parse_key(raw: bytes, path: str) -> bytes:
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != 32:
        raise ValueError(f"{path} is not a mem0 id key (64 hex digits); the ids of this store depend on it")
    return key


class IdCodec:
    """Seals (record id, owner) into a mem0 memory id and opens one."""

    def __init__(self, key: bytes) -> None:
        self._mac = hmac.new(key, digestmod=hashlib.sha256)  # keyed once; each use copies it
        self._tags: dict[str, bytes] = {}

    def _hmac(self, message: bytes) -> bytes:
        mac = self._mac.copy()
        mac.update(message)
        return mac.digest()[:8]

    def owner_tag(self, owner: str) -> bytes:
        """The 8-byte tag of ``owner`` under the store's secret."""
        tag = self._tags.get(owner)
        if tag is None:
            tag = self._hmac(b"owner\x00" + owner.encode("utf-8"))
            self._tags[owner] = tag
        return tag

    def _round(self, n: int, half: bytes) -> bytes:
        return self._hmac(bytes((n,)) + half)

    def encode(self, rid: int, owner: str) -> str:
        """The id of ``owner``'s memory of record ``rid``."""
        left, right = rid.to_bytes(8, "big"), self.owner_tag(owner)
        for n in range(_ROUNDS):
            left, right = right, _xor(left, self._round(n, right))
        return str(uuid.UUID(bytes=left + right))

    def decode(self, memory_id: object) -> Optional[tuple[int, bytes]]:
        """(record id, owner tag) sealed in ``memory_id``; ``None`` when it is
        not shaped as one of these ids."""
        if not isinstance(memory_id, str):
            return None
        try:
            raw = uuid.UUID(memory_id).bytes
        except ValueError:
            return None
        left, right = raw[:8], raw[8:]
        for n in reversed(range(_ROUNDS)):
            left, right = _xor(right, self._round(n, left)), left
        return int.from_bytes(left, "big"), right


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))
