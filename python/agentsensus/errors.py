"""The project's exceptions. ``Error`` is the base of all of them."""

from __future__ import annotations

from ._core import CorruptStoreError, Error, StoreFullError, StoreMovedError

__all__ = ["Error", "CorruptStoreError", "StoreFullError", "StoreMovedError", "ContentionError"]


class ContentionError(Error):
    """A deposit kept meeting concurrent commits that changed its decisions."""
