"""Shared fixtures: real stores on disk."""

from __future__ import annotations

import os
from typing import Iterator

import pytest
from agentsensus import Store
from helpers import DIM


def pytest_configure(config: pytest.Config) -> None:
    # Deselect with -m "not slow": tests that race real processes or spawn many connections.
    config.addinivalue_line("markers", "slow: a test that takes seconds (real processes, many connections)")


@pytest.fixture
def store_path(tmp_path) -> str:
    return os.fspath(tmp_path / "store")


@pytest.fixture
def store(store_path) -> Iterator[Store]:
    s = Store(store_path, dim=DIM)
    yield s
    s.close()
