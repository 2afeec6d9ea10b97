"""The engine's C++ unit tests (tests/cpp: the heads codec, the frontier walk
on crafted graphs, the page checks, the crowded-store verdict, the int8
kernels, the lexical index's remembered word counts and per-call word
table, the idle read handles, and the commit's conflicts on a real store),
configured, built and run with cmake and ctest in a temporary build
directory; any failing case fails this test.

The build fetches the usearch and lmdb sdists as the wheel build does
(cmake/PyPISdist.cmake); the copies a `pip install .` left in build/*/_sdists
are reused (AGENTSENSUS_SDIST_DIR), so no network is needed after one.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a CMake build and ctest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sdist_dir() -> str | None:
    if os.environ.get("AGENTSENSUS_SDIST_DIR"):
        return os.environ["AGENTSENSUS_SDIST_DIR"]
    for d in sorted(glob.glob(os.path.join(ROOT, "build", "*", "_sdists"))):
        if glob.glob(os.path.join(d, "lmdb-*.tar.gz")) and glob.glob(os.path.join(d, "usearch-*.tar.gz")):
            return d
    return None


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_cpp_unit_tests_pass(tmp_path):
    # Not a skip: the package was built with CMake, so a machine without it on
    # PATH would silently lose the C++ tests; say what to install instead.
    missing = [t for t in ("cmake", "ctest") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not on PATH: the C++ unit tests need them (apt-get install cmake)")
    if not os.path.exists(os.path.join(ROOT, "tests", "cpp", "check.hpp")):
        pytest.fail(f"tests/cpp is missing from {ROOT}: the test tree is incomplete")
    env = dict(os.environ)
    sdists = _sdist_dir()
    if sdists:
        env["AGENTSENSUS_SDIST_DIR"] = sdists
    build = str(tmp_path / "build")
    configure = [
        "cmake",
        "-S",
        ROOT,
        "-B",
        build,
        "-DAGENTSENSUS_PYTHON=OFF",
        "-DAGENTSENSUS_TESTS=ON",
        # Debug: no optimizer (a build of seconds) and the asserts on.
        "-DCMAKE_BUILD_TYPE=Debug",
        f"-DPython_EXECUTABLE={sys.executable}",
    ]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    steps = [
        (configure, 300),
        (
            ["cmake", "--build", build, "--target", "agentsensus_unit_tests", "-j", str(min(4, os.cpu_count() or 1))],
            1200,  # the commit-conflict test links the whole engine, index included
        ),
        (["ctest", "--test-dir", build, "--output-on-failure", "--timeout", "120"], 300),
    ]
    for cmd, timeout in steps:
        r = _run(cmd, env, timeout)
        assert r.returncode == 0, (
            f"{' '.join(cmd[:2])} failed ({r.returncode}):\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}"
        )
    assert "100% tests passed" in r.stdout, r.stdout
