"""CrewAI's own memory tests, from crewai 1.15.30's sdist (fetched at test
time by tests/integrations/upstream.py), run against ``ConsensusStorage``.

Adapted only in construction (tests/integrations/README.md, "CrewAI"): the
``LanceDBStorage(path=..., vector_dim=...)`` the suites build is a
``ConsensusStorage`` on a store at that path, and a ``Memory(storage=PATH)``
gets one through CrewAI's storage factory (``install(paths=True)``). Each
store is closed after its test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator, Optional

import pytest
from agentsensus.integrations import crewai as adapter
from agentsensus.integrations.crewai import ConsensusStorage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integrations"))
import upstream  # noqa: E402

VERSION = "1.15.30"
SUITES = upstream.sdist("crewai", VERSION) / "tests" / "memory"

_opened: list[ConsensusStorage] = []


class LanceDBConsensusStorage(ConsensusStorage):
    """``LanceDBStorage``'s constructor, building a ``ConsensusStorage`` on
    the store at ``path`` (by default, LanceDB's: ``$CREWAI_STORAGE_DIR/memory``;
    ``vector_dim``: the store's dimension, else the first save's; no fsync
    per commit: the suites test behaviour)."""

    def __init__(
        self,
        path: Any = None,
        table_name: str = "memories",
        vector_dim: Optional[int] = None,
        compact_every: int = 100,
    ) -> None:
        if path is None:
            path = Path(os.environ["CREWAI_STORAGE_DIR"]) / "memory"
        super().__init__(str(path), dim=vector_dim, sync=False)
        _opened.append(self)


@pytest.fixture(autouse=True)
def consensus_storages(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from crewai.memory.storage import lancedb_storage

    # CrewAI's default storage directory, one per test (not the user's data dir).
    monkeypatch.setenv("CREWAI_STORAGE_DIR", str(tmp_path_factory.mktemp("crewai-storage")))
    monkeypatch.setattr(lancedb_storage, "LanceDBStorage", LanceDBConsensusStorage)
    make = adapter.install(paths=True, sync=False)

    def tracked(spec: str) -> Optional[ConsensusStorage]:
        made = make(spec)
        if made is not None:
            _opened.append(made)
        return made

    from crewai.memory.storage.factory import set_memory_storage_factory

    set_memory_storage_factory(tracked)
    yield
    adapter.uninstall()
    while _opened:
        _opened.pop().close()


def _load(name: str, not_applicable: dict[str, str]) -> dict[str, Any]:
    module: ModuleType = upstream.load(SUITES / f"{name}.py", f"crewai_upstream_{name}")
    short = name.removeprefix("test_")
    out: dict[str, Any] = {}
    for key, obj in upstream.collect(module, not_applicable).items():
        if key.startswith("test_"):
            out[f"test_{short}__{key[5:]}"] = obj
        elif key.startswith("Test"):
            out[f"Test_{short}__{key[4:]}"] = obj
        else:
            out[key] = obj
    return out


# Not applicable: name -> why (tests/integrations/README.md, "CrewAI").
_NO_STORAGE = (
    "CrewAI's own types, path helpers, scoring or mocks, no storage in them: they pass whatever the storage does"
)
STORAGE_FACTORY: dict[str, str] = {}
LANCEDB_UPDATE: dict[str, str] = {}
UNIFIED_MEMORY: dict[str, str] = {
    **dict.fromkeys(
        [
            "test_memory_record_defaults",
            "test_memory_match",
            "test_memory_record_embedding_excluded_from_serialization",
            "test_memory_match_embedding_excluded_from_serialization",
            "test_scope_info",
            "test_memory_config",
            "test_memory_scope_config_can_be_reused",
            "test_memory_slice_config_can_be_reused_without_normalizing_it_in_place",
            "test_memory_kind_inference_preserves_input",
            "test_executor_save_to_memory_calls_extract_then_remember_per_item",
            "test_executor_save_to_memory_skips_delegation_output",
            "test_memory_scope_extract_memories_delegates",
            "test_memory_slice_extract_memories_delegates",
            "test_composite_score_brand_new_memory",
            "test_composite_score_old_memory_decayed",
            "test_composite_score_match_reasons_populated",
            "test_composite_score_custom_config",
            "test_analyze_for_save_llm_failure_returns_defaults",
            "test_extract_memories_llm_failure_returns_raw",
            "test_analyze_query_llm_failure_returns_defaults",
        ],
        _NO_STORAGE,
    ),
    "test_lancedb_list_records_exceeding_scan_cap": (
        "checks LanceDB's 50,000-row scan cap with 52,000 records of one zero vector; ConsensusStorage "
        "has no scan cap, and there every record is every other's merge candidate (minutes of judging); "
        "test_lancedb_list_records_order_and_pagination checks newest-first paging"
    ),
    "test_recall_does_not_refresh_access_time_when_read_only": (
        "its positive control expects a recall to refresh last_accessed (CrewAI calls a storage's "
        "touch_records when it has one); ConsensusStorage has none: a recall writes nothing"
    ),
}
DIMENSION_MISMATCH: dict[str, str] = {
    "test_error_is_not_a_runtime_error": _NO_STORAGE,
    "test_memory_reset_all_rebuilds_reopened_store_with_new_dimension": (
        "expects reset_all to let the next save pick a new dimension (LanceDB drops its table); "
        "a store's dimension is fixed when it is made, and reset() leaves it empty with the same one"
    ),
}
ROOT_SCOPE: dict[str, str] = dict.fromkeys(
    ["TestSanitizeScopeName", "TestNormalizeScopePath", "TestJoinScopePaths"], _NO_STORAGE
)
FILTER_ESCAPING: dict[str, str] = {}

globals().update(_load("test_storage_factory", STORAGE_FACTORY))
globals().update(_load("test_lancedb_update", LANCEDB_UPDATE))
globals().update(_load("test_unified_memory", UNIFIED_MEMORY))
globals().update(_load("test_dimension_mismatch", DIMENSION_MISMATCH))
globals().update(_load("test_memory_root_scope", ROOT_SCOPE))
globals().update(_load("test_lancedb_filter_escaping", FILTER_ESCAPING))
