"""`mypy --strict` over files a user would copy (the integration pages'
examples), against the package under test: the installed one, or a source
tree put on MYPYPATH as tests/test_typing.py does. One cache per package
and label, so a second run is quick."""

from __future__ import annotations

import hashlib
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import agentsensus

ROOT = Path(__file__).resolve().parents[2]


def mypy_strict(files: list[str], label: str) -> subprocess.CompletedProcess[str]:
    """Runs mypy --strict on ``files`` with the project's config; the caller
    asserts on the result."""
    base = str(Path(agentsensus.__file__).resolve().parent.parent)
    env = dict(os.environ)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if base not in installed:
        env["MYPYPATH"] = base
    tag = hashlib.sha1(f"{base}|{sys.version}|{label}".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"agentsensus-mypy-{tag}"
    cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml")]
    cmd += ["--cache-dir", str(cache), "--python-executable", sys.executable, *files]
    return subprocess.run(cmd, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=900)
