"""The project's style is checked, not hoped for: ruff (lint and format) over
the Python, clang-format over the C++. Both tools are pinned in the test
extra, so every machine formats the same way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # ruff and clang-format over the tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPP_DIRS = ("cpp", "bindings", "tests/cpp")


def _tool(name: str) -> str:
    # The console scripts live beside the interpreter running the tests.
    here = os.path.join(os.path.dirname(sys.executable), name)
    found = here if os.path.exists(here) else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; it is pinned in the test extra (pip install '.[test]')")
    return found


def _tracked(*suffixes: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *CPP_DIRS], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        # Not a git checkout (an unpacked sdist): every file below the folders.
        files = []
        for d in CPP_DIRS:
            for base, _, names in os.walk(os.path.join(ROOT, d)):
                files += [os.path.relpath(os.path.join(base, n), ROOT) for n in names]
    else:
        files = out.stdout.split()
    return sorted(f for f in files if f.endswith(suffixes) and os.path.exists(os.path.join(ROOT, f)))


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_lint() -> None:
    r = _run([_tool("ruff"), "check", "--no-cache", "."])
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format() -> None:
    r = _run([_tool("ruff"), "format", "--no-cache", "--check", "."])
    assert r.returncode == 0, "run `ruff format .`:\n" + r.stdout + r.stderr


def test_clang_format() -> None:
    files = _tracked(".cpp", ".hpp", ".h", ".cc")
    assert files, "no C++ files found"
    r = _run([_tool("clang-format"), "--dry-run", "--Werror", *files])
    assert r.returncode == 0, "run `clang-format -i` on cpp/, bindings/, tests/cpp/:\n" + r.stderr[-4000:]
