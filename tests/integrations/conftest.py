"""The frameworks' suites (test_upstream_*.py) mark their async tests for
pytest-asyncio; this suite runs them with asyncio.run instead
(upstream.collect), so the mark is only declared here."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "asyncio: an upstream async test (run by asyncio.run here)")
