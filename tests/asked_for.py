"""Folders of tests collected only when named on the command line
(tests/extras, tests/crewai_env): the default suite neither imports what
they need nor skips them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest


def ignore_unless_asked(folder: Path, conftest: Path, collection_path: Path, config: pytest.Config) -> Optional[bool]:
    """pytest_ignore_collect for ``folder``: its files are collected only
    when an argument names the folder or something inside it."""
    if collection_path.resolve() == conftest.resolve():
        return None
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        path = (base / arg.split("::")[0]).resolve()
        if path == folder or folder in path.parents:
            return None
    return True
