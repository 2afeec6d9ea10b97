"""Fixtures for Planfence tests: real stores on disk."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest
from agentsensus import Store

# The experiments' executors (bench/planfence_baselines) are bench code, not
# part of the package: appended, so nothing in bench/ shadows an installed name.
BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")
if BENCH not in sys.path:
    sys.path.append(BENCH)


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    s = Store(os.fspath(tmp_path / "store"), dim=4)
    yield s
    s.close()
