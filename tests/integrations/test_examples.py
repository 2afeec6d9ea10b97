"""The adapters' examples run as written, and type-check as written."""

from __future__ import annotations

import hashlib
import os
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import agentsensus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("name", ["langgraph_consensus_store.py", "autogen_consensus_memory.py"])
def test_example_runs(name: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "shared=1" in out.stdout


def test_examples_pass_mypy_strict() -> None:
    """What a user copies must type-check: ``index={"embed": embedders.hash}``
    against LangGraph's types, the memory against autogen-core's."""
    base = str(Path(agentsensus.__file__).resolve().parent.parent)
    env = dict(os.environ)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if base not in installed:
        env["MYPYPATH"] = base  # a source tree (as tests/test_typing.py)
    tag = hashlib.sha1(f"{base}|{sys.version}|examples".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"agentsensus-mypy-{tag}"
    files = sorted(str(p) for p in EXAMPLES.glob("*.py"))
    cmd = [
        sys.executable, "-m", "mypy", "--strict",
        "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(cache),
        "--python-executable", sys.executable,
        *files,
    ]
    out = subprocess.run(cmd, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Success: no issues found in {len(files)} source files" in out.stdout
