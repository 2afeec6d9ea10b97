"""``compact(path)``: rewrite a closed store's file without its free pages.

LMDB never overwrites a page that a reader might still see: a deleted record's
text stays in a free page of ``data.mdb`` until that page is reused. Compacting
copies only the live pages (LMDB's ``MDB_CP_COMPACT``) and atomically swaps
the copy in, so what ``forget`` deleted leaves the file. See
docs/reliability.md.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Union

from .. import _core
from .leftovers import remove_abandoned_imports

__all__ = ["compact", "Compacted"]


class Compacted(NamedTuple):
    """Sizes of ``data.mdb`` in bytes before and after compaction."""

    before: int
    after: int


def compact(path: Union[str, "os.PathLike[str]"]) -> Compacted:
    """Rewrites the store at ``path`` with only its live pages.

    Needs exclusive use: raises `agentsensus.Error` if the store is
    open in this process (through any path to it) or another one (processes that try to open it while
    it runs wait for it). Records, the journal and the store's identity are
    unchanged, so the saved index file stays valid. A crash leaves either the
    old file or the new one, whole."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    p = os.fspath(path)
    if not os.path.isfile(os.path.join(p, "data.mdb")):
        raise FileNotFoundError(f"no store at {p}")
    # The engine refuses a store open in this process, under any path to
    # it (cpp/src/lmdb/open_registry.hpp), and one open in another (LMDB's lock).
    # It also replaces a compact.tmp/ an interrupted compaction left.
    remove_abandoned_imports(p)
    before, after = _core.compact(p)
    return Compacted(int(before), int(after))
