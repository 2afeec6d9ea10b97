"""Fixtures for Planfence tests: real stores on disk."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from agentsensus import Store


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    s = Store(os.fspath(tmp_path / "store"), dim=4)
    yield s
    s.close()
