"""The frameworks' suites (test_upstream_*.py) mark their async tests for
pytest-asyncio; this suite runs them with asyncio.run instead
(upstream.collect), so the mark is only declared here."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "asyncio: an upstream async test (run by asyncio.run here)")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # The CrewAI venv (test_crewai_in_its_venv.py) takes minutes to build on a
    # fresh machine, mostly waiting on downloads: when its test is selected,
    # start the build now, beside the rest of the suite. The test's own
    # _build waits on the same lock, so it either finds the venv done or
    # finishes it; the build is bounded by its own timeouts.
    chosen = [i for i in items if i.module is not None and i.module.__name__.endswith("test_crewai_in_its_venv")]
    if chosen:
        module = chosen[0].module
        venv = module._venv_dir()
        threading.Thread(target=_build_quietly, args=(module._build, venv), daemon=True, name="crewai-venv").start()


def _build_quietly(build: Callable[[Path], None], venv: Path) -> None:
    try:
        build(venv)
    except BaseException:  # noqa: BLE001 - the test builds again and reports the failure itself
        pass
