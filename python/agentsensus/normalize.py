"""Normalized text, the key of exact-duplicate detection."""

from __future__ import annotations

import hashlib
import unicodedata

__all__ = ["normalize_text", "text_digest"]


def normalize_text(text: str) -> str:
    """NFKC, casefolded, whitespace collapsed: two statements that differ only
    in these ways are the same statement."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def text_digest(text: str) -> bytes:
    """16-byte digest of the normalized text (the engine indexes digests)."""
    return hashlib.blake2b(normalize_text(text).encode("utf-8"), digest_size=16).digest()
