"""Exactly-once batches: ``Store.deposit_many(items, batch_key=...)``.

The engine records the key, with the digest of what the batch deposits and
its result, in the batch's own write transaction (the ``batch_keys`` table),
so the batch and its key are committed together or not at all. A batch
retried under a recorded key (after a crash, an actor restart, a lost reply)
deposits nothing, calls no judge and returns the first result; a retry whose
owners, statements or round differ is refused, as the key names another
batch. Vectors are not part of the digest: a retry may embed again.
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional, Sequence

from .. import _core
from .._store.validation import check_text
from ..records import Deposit
from .plan import Item

__all__ = ["MAX_BATCH_KEY_BYTES", "check_batch_key", "batch_digest", "recorded_result"]

MAX_BATCH_KEY_BYTES: int = _core.MAX_BATCH_KEY_BYTES

#: (key bytes, digest bytes): what the engine's commit records.
BatchKey = tuple[bytes, bytes]


def check_batch_key(key: Any) -> bytes:
    """A batch key: a non-blank str of at most MAX_BATCH_KEY_BYTES UTF-8 bytes."""
    value = check_text(key, "batch_key", MAX_BATCH_KEY_BYTES, f"batch_key must be a non-empty str, got {key!r}")
    return value.encode("utf-8")


def batch_digest(items: Sequence[Item]) -> bytes:
    """What a batch deposits, as 16 bytes: each item's owner, round and
    statements in order, every field length-prefixed (no two batches share
    an encoding)."""
    h = hashlib.blake2b(digest_size=_core.BATCH_DIGEST_BYTES, person=b"agentsensus-bk")
    h.update(len(items).to_bytes(8, "little"))
    for it in items:
        for field in (it.owner, *it.statements):
            b = field.encode("utf-8")
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
        h.update(len(it.statements).to_bytes(8, "little") + it.round.to_bytes(8, "little"))
    return h.digest()


def recorded_result(engine: Any, batch: BatchKey) -> Optional[list[Deposit]]:
    """The result recorded under ``batch``'s key, or None when it is not
    recorded; ``ValueError`` when the key was recorded for another batch."""
    got = engine.batch_result(batch[0])
    if got is None:
        return None
    digest, ids, merged = got
    if digest != batch[1]:
        raise ValueError(
            f"batch_key {batch[0].decode('utf-8')!r} was already used for a different batch "
            "(other owners, statements or round)"
        )
    return [Deposit(list(i), list(m)) for i, m in zip(ids, merged)]
