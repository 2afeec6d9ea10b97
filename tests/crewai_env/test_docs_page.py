"""docs/integrations-crewai.md's examples run as written, with the crewai of this venv."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations-crewai.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
BLOCKS = _BLOCK.findall(PAGE.read_text())


def test_the_page_has_an_example() -> None:
    assert BLOCKS and "ConsensusStorage" in BLOCKS[0]


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_example_runs_as_written(n: int, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(BLOCKS[n])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "['researcher', 'writer']" in out.stdout
