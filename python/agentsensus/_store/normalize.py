"""Normalized text, the key of exact-duplicate detection."""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["normalize_text", "text_digest"]


def normalize_text(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: two statements that differ only
    in these ways are the same statement."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def text_digest(text: str, scope: str = "") -> bytes:
    """16-byte digest of the normalized text (the engine indexes digests).
    Outside the default scope ``""`` it is keyed by the scope (a keyed
    BLAKE2b, the key itself a digest of the scope's name), so the same text in
    two scopes has two digests and exact-duplicate detection never crosses
    scopes; the default scope's digests are those of stores from before
    scopes existed."""
    data = normalize_text(text).encode("utf-8")
    if not scope:
        return hashlib.blake2b(data, digest_size=16).digest()
    key = hashlib.blake2b(scope.encode("utf-8"), digest_size=32, person=b"agentsensus-scop").digest()
    return hashlib.blake2b(data, digest_size=16, key=key).digest()
