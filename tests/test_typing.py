"""``mypy --strict`` passes on the package as it is imported here: the source
tree in development, the installed wheel in scripts/check_wheel.sh and in
cibuildwheel. That also proves the wheel ships ``py.typed`` and the stub of
the compiled module."""

from __future__ import annotations

import hashlib
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import agentsensus
import pytest

pytestmark = pytest.mark.slow  # mypy --strict

ROOT = Path(__file__).resolve().parents[1]


def test_package_ships_its_types() -> None:
    pkg = Path(agentsensus.__file__).resolve().parent
    assert (pkg / "py.typed").is_file()
    assert (pkg / "_core.pyi").is_file()


def test_mypy_strict_is_clean() -> None:
    pkg = Path(agentsensus.__file__).resolve().parent
    base = str(pkg.parent)
    env = dict(os.environ)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if base not in installed:
        # A source tree: put it ahead of site-packages (mypy refuses
        # site-packages in MYPYPATH, and finds an installed package itself).
        env["MYPYPATH"] = base
    # A cache per checked copy keeps reruns to seconds; the first run is cold.
    tag = hashlib.sha1(f"{base}|{sys.version}".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"agentsensus-mypy-{tag}"
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(ROOT / "pyproject.toml"),  # strict = true, and the optional-model overrides
        "--cache-dir",
        str(cache),
        "--python-executable",
        sys.executable,
        "-p",
        "agentsensus",
    ]
    out = subprocess.run(cmd, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found" in out.stdout
