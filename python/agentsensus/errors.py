"""The project's exceptions. ``Error`` is the base of all of them.

``StoreMovedError``: a write on a store whose ``data.mdb`` was deleted or
replaced while the store was open (checked before every commit); nothing
was written, and every later write is refused the same way: reopen the
store."""

from __future__ import annotations

from ._core import CorruptStoreError, Error, StoreFullError, StoreMovedError

__all__ = ["Error", "CorruptStoreError", "StoreFullError", "StoreMovedError", "ContentionError"]


class ContentionError(Error):
    """A deposit kept meeting concurrent commits that changed its decisions."""
