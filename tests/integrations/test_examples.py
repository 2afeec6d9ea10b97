"""The adapters' examples run as written, and type-check as written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from strict_types import mypy_strict

pytestmark = pytest.mark.slow  # the examples as processes, and mypy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("name", ["langgraph_consensus_store.py", "autogen_consensus_memory.py"])
def test_example_runs(name: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "shared=1" in out.stdout


def test_examples_pass_mypy_strict(tmp_path: Path) -> None:
    """What a user copies must type-check, the examples and the docs' code
    alike: ``index={"embed": embedders.hash}`` against LangGraph's types,
    the memory against autogen-core's, the client against the mcp SDK's."""
    files = sorted(str(p) for p in EXAMPLES.glob("*.py"))
    for n, body in enumerate(_blocks("python")):
        (tmp_path / f"doc_integrations_{n}.py").write_text(body)
        files.append(str(tmp_path / f"doc_integrations_{n}.py"))
    out = mypy_strict(files, "examples")
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Success: no issues found in {len(files)} source files" in out.stdout


# -- docs/integrations.md: each integration's copy-paste example runs as written --------------

DOC = ROOT / "docs" / "integrations.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[str]:
    return [body for kind, body in _BLOCK.findall(DOC.read_text()) if kind == lang]


def test_the_doc_shows_each_integration() -> None:
    code = "\n".join(_blocks("python"))
    for module in ("integrations.langgraph", "integrations.autogen", "from mcp import Client"):
        assert module in code, module


@pytest.mark.parametrize("n", range(len(_blocks("python"))))
def test_doc_python_example_runs(n: int, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_blocks("python")[n])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_doc_desktop_client_configuration_starts_the_server(tmp_path: Path) -> None:
    """The JSON a desktop client is given launches a server that answers (the
    store path swapped for a temporary one)."""
    import asyncio

    from mcp import Client, StdioServerParameters

    (config,) = [json.loads(b) for b in _blocks("json")]
    entry = config["mcpServers"]["agentsensus"]
    command = shutil.which(entry["command"]) or str(Path(sys.executable).parent / entry["command"])
    assert os.path.exists(command), f"the {entry['command']!r} script is not installed beside {sys.executable}"
    args = [os.fspath(tmp_path / "memory") if a.startswith("/") else a for a in entry["args"]]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    async def session() -> list[str]:
        async with Client(StdioServerParameters(command=command, args=args, env=env)) as c:
            await c.call_tool("remember", {"statements": ["The ghost walks at midnight"]})
            return [t.name for t in (await c.list_tools()).tools]

    names = asyncio.run(asyncio.wait_for(session(), 120))
    assert "remember" in names and "check_plan" in names
