"""The frameworks' own test modules, fetched from PyPI at test time.

The sdists of langgraph-checkpoint, langgraph-checkpoint-sqlite and
autogen-core ship their tests. :func:`sdist` downloads the pinned sdist
(``pip download --no-binary :all: --no-deps``, PyPI only), checks its
sha256 and unpacks it into a cache directory (``$AGENTSENSUS_UPSTREAM_CACHE``,
default ``agentsensus-upstream`` in the temp dir); nothing of theirs is in
this repository. :func:`load` imports one of their test modules under a
private name, and :func:`collect` turns its tests into what pytest collects
in the calling module, with the listed not-applicable ones left out and
async tests run by ``asyncio.run`` (their suites use pytest-asyncio's auto
mode; this suite has no asyncio plugin).
tests/integrations/README.md lists every adaptation and why.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import hashlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

# (package, version) -> sha256 of its sdist on PyPI: the exact suites run here.
PINNED = {
    ("langgraph-checkpoint", "4.3.2"): "fcab8468c7e965d7055e2a35c253d73a145624ef4728b150ca7c361f4afca286",
    ("langgraph-checkpoint-sqlite", "3.1.2"): "4e3f376fa6f192d6ad2a1a4643b039986f1593552ef870e9e45281575de6fbf2",
    ("autogen-core", "0.7.5"): "70c2871389f1d0a7f6db8ef78717a51b7ce877ff4a08a836b7758d604dece203",
    # run in crewai's own venv (tests/crewai_env/test_upstream_crewai.py)
    ("crewai", "1.15.30"): "17de4b7cc3f2c207033e9f82be4f7d749e540b0e415a3885a8d97bb43a90a318",
}


def cache_dir() -> Path:
    return Path(os.environ.get("AGENTSENSUS_UPSTREAM_CACHE") or Path(tempfile.gettempdir()) / "agentsensus-upstream")


def sdist(package: str, version: str) -> Path:
    """The unpacked sdist of ``package==version`` (its top directory)."""
    digest = PINNED[(package, version)]
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    done = root / f"{package}-{version}-{digest[:12]}"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one download per machine, whoever runs the suite
        if not done.is_dir():
            work = Path(tempfile.mkdtemp(dir=root, prefix=".fetch-"))
            try:
                cmd = [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--disable-pip-version-check",
                    "-q",
                    "--no-binary",
                    ":all:",
                    "--no-deps",
                    "-d",
                    str(work),
                    f"{package}=={version}",
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if out.returncode != 0:
                    raise RuntimeError(f"pip download {package}=={version} failed: {out.stderr.strip()[-2000:]}")
                (archive,) = [p for p in work.iterdir() if p.name.endswith(".tar.gz")]
                got = hashlib.sha256(archive.read_bytes()).hexdigest()
                if got != digest:
                    raise RuntimeError(f"{archive.name} has sha256 {got}, not the pinned {digest}")
                with tarfile.open(archive) as tar:
                    if hasattr(tarfile, "data_filter"):
                        tar.extractall(work / "x", filter="data")
                    else:  # Python before 3.10.12: no extraction filters; refuse what would escape
                        names = [m.name for m in tar.getmembers()]
                        if any(n.startswith(("/", "..")) or "/../" in n for n in names):
                            raise RuntimeError(f"{archive.name} holds paths outside its top directory")
                        tar.extractall(work / "x")
                (top,) = list((work / "x").iterdir())
                top.rename(done)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return done


def load(path: Path, name: str, aliases: Mapping[str, ModuleType] = {}) -> ModuleType:
    """Imports the test module at ``path`` as ``name``. ``aliases`` stand in
    for the modules it imports from its own ``tests`` package, for the time of
    the import only (this repository's tests are no such package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = {k: sys.modules.get(k) for k in aliases}
    sys.modules.update(aliases)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


def _sync(test: Callable[..., Any]) -> Callable[..., Any]:
    """An async test as a sync one pytest runs: same name, signature (so the
    same fixtures and parameters) and marks; one event loop per test."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def collect(
    module: ModuleType, not_applicable: Mapping[str, str], skip_fixtures: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The tests and fixtures of ``module`` for the caller's globals: tests
    named in ``not_applicable`` (name -> reason) are left out, and so are the
    fixtures the caller replaces. Raises when a not-applicable name is not a
    test of the module, so the list cannot drift from the suite."""
    missing = sorted(set(not_applicable) - set(vars(module)))
    if missing:
        raise LookupError(f"not-applicable names that {module.__name__} does not define: {missing}")
    out: dict[str, Any] = {}
    for name, obj in vars(module).items():
        if name in not_applicable:
            continue
        if name.startswith("test_") and inspect.iscoroutinefunction(obj):
            out[name] = _sync(obj)
        elif name.startswith("test_") and inspect.isfunction(obj):
            out[name] = obj
        elif name.startswith("Test") and inspect.isclass(obj):
            out[name] = _sync_class(obj)
        elif type(obj).__name__ == "FixtureFunctionDefinition" and name not in skip_fixtures:
            out[name] = obj
    return out


def _sync_class(cls: type) -> type:
    """A test class with its async test methods run by ``asyncio.run``."""
    methods = {k: _sync(v) for k, v in vars(cls).items() if k.startswith("test") and inspect.iscoroutinefunction(v)}
    return type(cls.__name__, (cls,), methods) if methods else cls
