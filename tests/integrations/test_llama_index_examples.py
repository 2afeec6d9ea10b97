"""docs/integrations-llama-index.md: its example runs as written, prints what the page
says it prints, and type-checks under ``mypy --strict``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from strict_types import mypy_strict

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


@pytest.mark.slow
def test_the_example_passes_mypy_strict(tmp_path: Path) -> None:
    """What a user copies must type-check against llama-index-core's types."""
    (code,) = _blocks("python")
    script = tmp_path / "doc_llama_index.py"
    script.write_text(code)
    out = mypy_strict([str(script)], "llama-index-doc")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found in 1 source file" in out.stdout
