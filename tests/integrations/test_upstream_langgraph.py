"""LangGraph's own BaseStore suites, run against ``ConsensusStore``.

The modules are langgraph-checkpoint's ``tests/test_store.py`` (the suite of
its ``InMemoryStore``, the reference ``BaseStore``) and
langgraph-checkpoint-sqlite's ``tests/test_store.py`` and
``tests/test_async_store.py`` (a persistent store's suite), at the pinned
versions, fetched from PyPI by :mod:`upstream`. Where they name a concrete
store class, that name is rebound to a ``ConsensusStore`` on a fresh store
directory; that and the not-applicable cases are the whole adaptation
(tests/integrations/README.md lists each, with its reason).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import pytest
from agentsensus.integrations.langgraph import ConsensusStore

sys.path.insert(0, os.path.dirname(__file__))
import upstream  # noqa: E402

pytestmark = pytest.mark.slow  # the framework's own suite

_made: list[tuple[ConsensusStore, str]] = []


def _fresh_dir() -> str:
    return tempfile.mkdtemp(prefix="lg-upstream-")


# The suites test behaviour, not durability: no fsync per commit keeps them fast.
FAST = {"sync": False}


class InMemoryConsensusStore(ConsensusStore):
    """Stands in for ``InMemoryStore(index=...)``: a ConsensusStore on a fresh directory."""

    def __init__(self, *, index: Any = None) -> None:
        path = _fresh_dir()
        super().__init__(os.path.join(path, "store"), index=index, **FAST)
        _made.append((self, path))


def _sqlite_index(index: Any) -> Any:
    """SqliteIndexConfig's ``text_fields`` is IndexConfig's ``fields``."""
    if index is None:
        return None
    out = dict(index)
    if "text_fields" in out:
        out["fields"] = out.pop("text_fields")
    return out


def _dir_for(conn_string: str) -> str:
    """A store directory for a SQLite connection string: ``:memory:`` gets a
    fresh one, a file path its own (so a reopen finds the same data)."""
    if conn_string == ":memory:":
        return os.path.join(_fresh_dir(), "store")
    return conn_string + ".agentsensus"


class SqliteConsensusStore(ConsensusStore):
    """Stands in for ``SqliteStore``: ``from_conn_string`` and ``setup``."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> Iterator["SqliteConsensusStore"]:
        assert ttl is None, "ConsensusStore has no TTL (supports_ttl is False)"
        path = _dir_for(conn_string)
        store = cls(path, index=_sqlite_index(index), **FAST)
        try:
            yield store
        finally:
            store.close()
            shutil.rmtree(path if conn_string != ":memory:" else os.path.dirname(path), ignore_errors=True)

    def setup(self) -> None:
        """SQLite's migrations; the store needs none."""


class AsyncSqliteConsensusStore(SqliteConsensusStore):
    """Stands in for ``AsyncSqliteStore``: an async ``from_conn_string`` and ``setup``."""

    @classmethod
    @asynccontextmanager  # type: ignore[arg-type]
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> AsyncIterator["AsyncSqliteConsensusStore"]:  # type: ignore[override]
        with SqliteConsensusStore.from_conn_string.__func__(cls, conn_string, index=index, ttl=ttl) as store:  # type: ignore[attr-defined]
            yield store

    async def setup(self) -> None:  # type: ignore[override]
        """SQLite's migrations; the store needs none."""


@pytest.fixture(autouse=True)
def _close_what_the_suites_opened() -> Iterator[None]:
    yield
    while _made:
        s, path = _made.pop()
        s.close()
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def store() -> Iterator[ConsensusStore]:
    """Replaces the SQLite suites' ``store`` (an in-memory and a file SQLite connection)."""
    path = _fresh_dir()
    s = ConsensusStore(os.path.join(path, "store"), **FAST)
    yield s
    s.close()
    shutil.rmtree(path, ignore_errors=True)


# -- langgraph-checkpoint: InMemoryStore's suite -------------------------------------------

CHECKPOINT = upstream.sdist("langgraph-checkpoint", "4.3.2")
_embed_utils = upstream.load(CHECKPOINT / "tests" / "embed_test_utils.py", "upstream_lg_embed_test_utils")
memory_suite = upstream.load(
    CHECKPOINT / "tests" / "test_store.py", "upstream_lg_test_store", {"tests.embed_test_utils": _embed_utils}
)
memory_suite.InMemoryStore = InMemoryConsensusStore

# Tests of LangGraph's own helpers, with no store in them: they would pass
# whatever the store did, so they are not counted as the store's.
_NO_STORE = "tests LangGraph's own helper, no store involved"
MEMORY_NOT_APPLICABLE = {
    "test_dedupe_ops_maps_repeated_reads_and_puts_to_one_op": _NO_STORE,
    "test_get_text_at_path": _NO_STORE,
    "test_get_text_at_path_with_non_dict_mapping": _NO_STORE,
    "test_async_batch_store": _NO_STORE + " (AsyncBatchedBaseStore over a mock)",
    "test_async_batch_store_handles_cancellation": _NO_STORE + " (AsyncBatchedBaseStore over a mock)",
    "test_validate_op_namespace_rejects_invalid_labels": _NO_STORE,
    "test_validate_op_namespace_allows_empty_prefix_and_wildcards": _NO_STORE,
}

# -- langgraph-checkpoint-sqlite: SqliteStore's and AsyncSqliteStore's suites ----------------

SQLITE = upstream.sdist("langgraph-checkpoint-sqlite", "3.1.2")
sqlite_suite = upstream.load(SQLITE / "tests" / "test_store.py", "upstream_lg_sqlite_test_store")
sqlite_suite.SqliteStore = SqliteConsensusStore
async_suite = upstream.load(
    SQLITE / "tests" / "test_async_store.py", "upstream_lg_sqlite_test_async_store", {"tests.test_store": sqlite_suite}
)
async_suite.AsyncSqliteStore = AsyncSqliteConsensusStore

SQLITE_NOT_APPLICABLE = {
    "test_escape_glob_literal": "tests SqliteStore's GLOB escaping helper, no store involved",
    "test_namespace_match_pattern": "tests SqliteStore's namespace GLOB helper, no store involved",
    "test_list_namespaces_prefix_uses_indexable_condition": "inspects the SQL that BaseSqliteStore builds",
    "test_nonnull_migrations": "reads SqliteStore.MIGRATIONS, SQLite's schema migrations",
    "test_sql_injection_vulnerability": "expects SqliteStore's 'Invalid filter key' for keys that would break "
    "its SQL; ConsensusStore builds no SQL from filter keys, such a key is a plain key that matches nothing",
    "test_vector_store_initialization": "asserts index_config echoes SqliteIndexConfig's 'text_fields'; "
    "ConsensusStore takes IndexConfig's 'fields' (the stand-in passes text_fields as fields, and "
    "test_sqlite_embed_with_path shows they are honoured)",
}
ASYNC_NOT_APPLICABLE = {
    "test_no_running_loop": "AsyncSqliteStore refuses its sync methods on the event loop's thread; "
    "ConsensusStore is one store with both sync and async methods",
}


def _prefixed(tests: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The suites share test names: each gets its own prefix (classes keep theirs, they do not collide)."""
    return {(f"test_{prefix}_{k[5:]}" if k.startswith("test_") else k): v for k, v in tests.items()}


globals().update(_prefixed(upstream.collect(memory_suite, MEMORY_NOT_APPLICABLE), "memory"))
globals().update(_prefixed(upstream.collect(sqlite_suite, SQLITE_NOT_APPLICABLE, skip_fixtures=("store",)), "sqlite"))
globals().update(_prefixed(upstream.collect(async_suite, ASYNC_NOT_APPLICABLE, skip_fixtures=("store",)), "asqlite"))


def test_readme_lists_every_adaptation() -> None:
    """tests/integrations/README.md names every left-out case of these suites."""
    readme = (Path(__file__).parent / "README.md").read_text()
    for name in [*MEMORY_NOT_APPLICABLE, *SQLITE_NOT_APPLICABLE, *ASYNC_NOT_APPLICABLE]:
        assert f"`{name}`" in readme, name
