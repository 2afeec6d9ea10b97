"""docs/integrations-adk.md's example runs as written and type-checks as
written; importing the package does not import ADK."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from strict_types import mypy_strict

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "integrations-adk.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _python_blocks() -> list[str]:
    return [body for kind, body in _BLOCK.findall(DOC.read_text()) if kind == "python"]


def test_the_page_has_an_example_of_the_adapter() -> None:
    (code,) = _python_blocks()
    assert "from agentsensus.integrations.adk import ConsensusMemoryService" in code
    assert "memory_service=memory" in code


def test_the_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_python_blocks()[0])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["analyst ['analyst', 'scout', 'user'] The launch is on Friday."]


@pytest.mark.slow
def test_the_example_passes_mypy_strict(tmp_path: Path) -> None:
    """What a user copies must type-check against ADK's own types."""
    script = tmp_path / "doc_adk.py"
    script.write_text(_python_blocks()[0])
    out = mypy_strict([str(script)], "adk-example")
    assert out.returncode == 0, out.stdout + out.stderr


def test_importing_the_package_does_not_import_adk() -> None:
    code = "import sys, agentsensus, agentsensus.integrations; print('google.adk' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"
