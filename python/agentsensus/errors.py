"""The project's exceptions. ``Error`` is the base of all of them."""

from __future__ import annotations

from ._core import CorruptStoreError, Error, StoreFullError

__all__ = ["Error", "CorruptStoreError", "StoreFullError", "ContentionError"]


class ContentionError(Error):
    """A deposit kept meeting concurrent commits that changed its decisions."""
