"""The CrewAI adapter's tests, run in a venv of their own.

crewai 1.x needs ``openai>=2.30,<3`` and ``mcp>=1.30,<2``; the ``test``
extra pins openai 3 and mcp 2, so crewai cannot be installed beside it.
This test builds a venv with the ``crewai`` extra's pin (once per machine:
``$AGENTSENSUS_CREWAI_VENV``, default ``~/.cache/agentsensus-test/<pin>-py<X.Y>``,
reused when complete), makes the agentsensus package under test importable
there (the package directory alone, not the site-packages it sits in, and
no rebuild) and runs ``pytest tests/crewai_env`` in it: CrewAI's flow with
two agents sharing a record, and CrewAI's own memory suites
(tests/integrations/README.md, "CrewAI").
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import agentsensus
import numpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _pin(name: str) -> str:
    """``name==version`` as pyproject.toml pins it (the first pin of it)."""
    found = re.search(rf'"({re.escape(name)}==[^"]+)"', PYPROJECT)
    assert found, f"pyproject.toml pins no {name}"
    return found.group(1)


CREWAI = _pin("crewai")
# The test extra's pins where they exist; numpy as the engine under test was built against.
REQUIREMENTS = [CREWAI, _pin("pytest"), _pin("hypothesis"), f"numpy=={numpy.__version__}"]


def _venv_dir() -> Path:
    given = os.environ.get("AGENTSENSUS_CREWAI_VENV")
    if given:
        return Path(given)
    tag = f"{CREWAI.replace('==', '-')}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return Path.home() / ".cache" / "agentsensus-test" / tag


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _build(venv: Path) -> None:
    """Creates the venv and installs REQUIREMENTS, unless a complete one is
    there (its marker names exactly these requirements)."""
    marker = venv / "agentsensus-requirements.txt"
    want = "\n".join(REQUIREMENTS) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build per machine, whoever runs the suite
        if marker.is_file() and marker.read_text() == want and _python(venv).exists():
            return
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        cmd = [str(_python(venv)), "-m", "pip", "install", "--disable-pip-version-check", "-q", *REQUIREMENTS]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        assert out.returncode == 0, f"pip install {' '.join(REQUIREMENTS)} failed:\n{out.stderr[-4000:]}"
        marker.write_text(want)


@pytest.mark.slow
def test_crewai_suites_pass_in_a_venv_with_crewai(tmp_path: Path) -> None:
    venv = _venv_dir()
    _build(venv)
    # Only the package under test: its parent may be a site-packages full of
    # the test extra's packages (openai 3, mcp 2) that crewai cannot run with.
    shelf = tmp_path / "package"
    shelf.mkdir()
    (shelf / "agentsensus").symlink_to(Path(agentsensus.__file__).resolve().parent, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        PYTHONPATH=str(shelf),
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_DISABLE_TRACKING="true",
        CREWAI_TRACING_ENABLED="false",
        OTEL_SDK_DISABLED="true",
        CREWAI_STORAGE_DIR=str(tmp_path / "crewai-storage"),
    )
    cmd = [
        str(_python(venv)),
        "-m",
        "pytest",
        str(ROOT / "tests" / "crewai_env"),
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
    ]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = (out.stdout + out.stderr)[-6000:]
    assert out.returncode == 0, tail
    summary = out.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary and "error" not in summary, tail
    # The package the venv imported is the one under test, not another copy.
    probe = [str(_python(venv)), "-c", "import agentsensus; print(agentsensus.__file__)"]
    where = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    assert Path(where).resolve().parent == Path(agentsensus.__file__).resolve().parent
