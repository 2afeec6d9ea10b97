"""docs/integrations-llama-index.md: its example runs as written, prints what the page
says it prints, and type-checks under ``mypy --strict``."""

from __future__ import annotations

import hashlib
import os
import re
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import agentsensus

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations-llama-index.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(DOC.read_text()) if kind == lang]


def test_the_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    (code,) = _blocks("python")
    (shown,) = _blocks("text")
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == shown


def test_the_example_passes_mypy_strict(tmp_path: Path) -> None:
    """What a user copies must type-check against llama-index-core's types."""
    base = str(Path(agentsensus.__file__).resolve().parent.parent)
    env = dict(os.environ)
    installed = {str(Path(p).resolve()) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if base not in installed:
        env["MYPYPATH"] = base  # a source tree (as tests/test_typing.py)
    tag = hashlib.sha1(f"{base}|{sys.version}|llama-index-doc".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"agentsensus-mypy-{tag}"
    (code,) = _blocks("python")
    script = tmp_path / "doc_llama_index.py"
    script.write_text(code)
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--config-file",
        str(ROOT / "pyproject.toml"),
        "--cache-dir",
        str(cache),
        "--python-executable",
        sys.executable,
        str(script),
    ]
    out = subprocess.run(cmd, cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found in 1 source file" in out.stdout
