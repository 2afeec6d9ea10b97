"""Tests that run in a venv of their own, with crewai installed: crewai 1.x
pins openai and mcp majors that the ``test`` extra's pins exclude, so the
two cannot share one environment.

The main suite runs them through tests/integrations/test_crewai_in_its_venv.py,
which builds that venv (``pip install 'crewai==1.15.30' ...``) and runs
``pytest tests/crewai_env`` in it. Collected only when asked for, like
tests/extras: the main venv has no crewai to import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from asked_for import ignore_unless_asked

HERE = Path(__file__).resolve().parent

# No telemetry, no tracing prompt, no network beyond 127.0.0.1.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return ignore_unless_asked(HERE, Path(__file__), collection_path, config)


def pytest_configure(config: pytest.Config) -> None:
    # CrewAI's own suites mark tests for pytest-asyncio and VCR; neither plugin is installed here.
    config.addinivalue_line("markers", "asyncio: an upstream async test (run by asyncio.run here)")
    config.addinivalue_line("markers", "vcr: an upstream recorded-HTTP test")


@pytest.fixture(autouse=True)
def _no_factory() -> Iterator[None]:
    """Each test starts and ends with CrewAI's built-in storage selection."""
    from crewai.memory.storage import factory

    saved = factory._factory
    factory.set_memory_storage_factory(None)
    yield
    factory.set_memory_storage_factory(saved)
