"""The CrewAI adapter's rule of owners and scopes, and its views, without
CrewAI (the backend itself is tested in crewai's own venv:
test_crewai_in_its_venv.py)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pytest
from agentsensus import Store
from agentsensus.integrations.crewai_views import (
    OWNERS_KEY,
    fields_of,
    normal_path,
    owner_and_scope,
    scope_clauses,
    under,
    view_of,
)


@dataclass
class Record:
    """The fields of CrewAI's MemoryRecord a view keeps."""

    id: str = "r-1"
    scope: str = "/crew/desk/agent/researcher/launch"
    categories: list[str] = field(default_factory=lambda: ["schedule"])
    metadata: dict[str, Any] = field(default_factory=dict)
    importance: float = 0.7
    created_at: datetime.datetime = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
    last_accessed: datetime.datetime = datetime.datetime(2026, 1, 3)
    source: Optional[str] = None
    private: bool = False


@pytest.mark.parametrize(
    ("path", "source", "acting", "want"),
    [
        ("/crew/desk/agent/researcher/launch", None, None, ("researcher", "/crew/desk")),
        ("/crew/desk/agent/researcher", "u1", None, ("researcher", "/crew/desk")),
        ("/agent/writer", None, None, ("writer", "/")),
        ("/crew/desk/agent/researcher/x", None, "editor", ("editor", "/crew/desk")),
        ("/crew/desk/decisions", "u1", None, ("u1", "/crew/desk/decisions")),
        ("/crew/desk/decisions", None, None, ("crew", "/crew/desk/decisions")),
        ("/crew/desk/agent", None, None, ("crew", "/crew/desk/agent")),  # no role after it
        ("crew//desk/", None, None, ("crew", "/crew/desk")),
        ("/", None, None, ("crew", "/")),
    ],
)
def test_owner_and_scope(path: str, source: Optional[str], acting: Optional[str], want: tuple[str, str]) -> None:
    assert owner_and_scope(path, source, "crew", acting) == want


def test_under_is_segment_wise() -> None:
    assert under("/crew/a/x", "/crew/a") and under("/crew/a", "/crew/a/") and under("/crew/a", None)
    assert not under("/crew/ab", "/crew/a") and not under("/crew/a-b", "/crew/a") and not under("/crew", "/crew/a")
    assert normal_path("a//b/") == "/a/b" and normal_path(None) == "/"


def test_scope_clauses_select_exactly_the_paths_under_a_prefix(tmp_path: Any) -> None:
    """The where clauses, run by the engine, agree with ``under``."""
    paths = ["/c", "/c/a", "/c/a/b", "/c-b", "/c!", "/c0", "/cb", "/c/\U0001f600", "/", "/d"]
    with Store(str(tmp_path / "s"), dim=2, metric="l2sq") as store:
        for n, p in enumerate(paths):
            store.deposit("o", [f"t{n}"], np.ones((1, 2), np.float32), metadata={"path": p})
        probe = np.ones(2, np.float32)
        for prefix in ("/c", "/c/a", "/", "/x"):
            got = set()
            for where in scope_clauses(prefix):
                got |= {m.metadata["path"] for m in store.recall("o", probe, k=len(paths), expand=False, where=where)}
            assert got == {p for p in paths if under(p, prefix)}, prefix


def test_a_view_round_trips_the_fields() -> None:
    record = Record(metadata={"k": [1, "two"], OWNERS_KEY: ["a", "b"]}, source="u1", private=True)
    fields = fields_of(view_of(record))
    assert fields == {
        "id": "r-1",
        "scope": record.scope,
        "categories": ["schedule"],
        "metadata": {"k": [1, "two"]},  # the owners shown on reads are never stored
        "importance": 0.7,
        "created_at": record.created_at,
        "last_accessed": record.last_accessed,
        "source": "u1",
        "private": True,
    }


def test_a_view_refuses_metadata_that_is_not_json() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        view_of(Record(metadata={"when": datetime.datetime(2026, 1, 1)}))
    with pytest.raises(TypeError, match="not JSON serializable"):
        view_of(Record(metadata={"tags": {"a"}}))
