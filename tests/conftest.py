"""Shared fixtures: real stores on disk."""

from __future__ import annotations

import os
from typing import Iterator

import pytest
from agentsensus import Store
from helpers import DIM


def pytest_configure(config: pytest.Config) -> None:
    # `pytest -m "not slow"` is the quick tier (CONTRIBUTING.md); the README's command runs both.
    config.addinivalue_line(
        "markers",
        "slow: takes seconds: other processes, clusters, builds, upstream suites, docs, type and style checks",
    )


@pytest.fixture
def store_path(tmp_path) -> str:
    return os.fspath(tmp_path / "store")


@pytest.fixture
def store(store_path) -> Iterator[Store]:
    s = Store(store_path, dim=DIM)
    yield s
    s.close()
