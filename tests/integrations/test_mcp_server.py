"""``agentsensus mcp``: a real server process, driven by the ``mcp`` SDK's own client."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from agentsensus import Store, cli, embedders
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow  # servers in other processes

GHOST = "The ghost walks on the platform at midnight"
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
LIMIT = 120.0  # seconds any one session may take; a hung server fails the test, never the suite


def server(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=list(args), env=ENV)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def test_stdio_server_serves_every_tool(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")

    async def session() -> None:
        async with Client(server("-m", "agentsensus.integrations.mcp_server", path)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert sorted(tools) == sorted(
                ["remember", "recall", "get", "list_memories", "forget", "stats", "publish", "derive", "check_plan"]
            )
            assert "owner" in tools["recall"].input_schema["properties"]
            assert tools["recall"].annotations is not None and tools["recall"].annotations.read_only_hint

            first = data(await c.call_tool("remember", {"owner": "hamlet", "statements": [GHOST, "The king drinks"]}))
            assert first["merged"] == [False, False]
            again = data(await c.call_tool("remember", {"owner": "horatio", "statements": [GHOST]}))
            assert again == {"ids": [first["ids"][0]], "merged": [True]}  # the same fact: one record, two owners

            found = data(await c.call_tool("recall", {"owner": "horatio", "query": "a ghost at midnight", "k": 3}))
            (hit,) = found["memories"]  # horatio owns only the ghost
            assert (hit["text"], hit["owners"], hit["via"]) == (GHOST, ["hamlet", "horatio"], "hit")
            assert data(await c.call_tool("get", {"id": first["ids"][1]}))["owners"] == ["hamlet"]
            listed = data(await c.call_tool("list_memories", {"owner": "hamlet"}))["memories"]
            assert [m["text"] for m in listed] == [GHOST, "The king drinks"]
            assert data(await c.call_tool("stats", {}))["shared"] == 1

            assert (
                data(await c.call_tool("forget", {"owner": "hamlet", "id": first["ids"][0]}))["forgotten"]
                == first["ids"][0]
            )
            assert data(await c.call_tool("get", {"id": first["ids"][0]}))["owners"] == ["horatio"]

            # Planfence: a plan derived from an input goes stale when the input moves.
            v1 = data(await c.call_tool("publish", {"key": "weather", "owner": "horatio", "value": "fog"}))["version"]
            plan = {"key": "plan", "owner": "hamlet", "value": "walk at midnight", "inputs": {"weather": v1}}
            data(await c.call_tool("derive", plan))
            assert data(await c.call_tool("check_plan", {"key": "plan"}))["current"] is True
            data(await c.call_tool("publish", {"key": "weather", "owner": "horatio", "value": "storm"}))
            check = data(await c.call_tool("check_plan", {"key": "plan"}))
            assert check["current"] is False and [s["key"] for s in check["stale"]] == ["weather"]

            # Bad input: a one-line message for the model, nothing written.
            before = data(await c.call_tool("stats", {}))
            assert "no record 999" in error(await c.call_tool("get", {"id": 999}))
            assert "owner" in error(await c.call_tool("remember", {"owner": "", "statements": ["x"]}))
            assert "query" in error(await c.call_tool("recall", {"owner": "hamlet", "query": " "}))
            assert "does not exist" in error(await c.call_tool("derive", {**plan, "inputs": {"nothing": 1}}))
            assert data(await c.call_tool("stats", {})) == before

    asyncio.run(asyncio.wait_for(session(), LIMIT))
    # The server process has stopped (the client closed it) and the store is on disk.
    with Store(path) as store:
        assert sorted(m.text for m in store.records()) == [GHOST, "The king drinks"]


def test_cli_with_a_fixed_owner(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")

    async def session() -> None:
        async with Client(server("-m", "agentsensus.cli", "mcp", path, "--owner", "ophelia")) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert all("owner" not in t.input_schema.get("properties", {}) for t in tools.values())
            data(await c.call_tool("remember", {"statements": ["Rosemary is for remembrance"]}))
            found = data(await c.call_tool("recall", {"query": "rosemary"}))["memories"]
            assert [m["owners"] for m in found] == [["ophelia"]]
            assert data(await c.call_tool("publish", {"key": "flowers", "value": "rosemary"}))["version"] == 1

    asyncio.run(asyncio.wait_for(session(), LIMIT))
    with Store(path) as store:
        assert store.fence.owner("flowers") == "ophelia"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_on_loopback(tmp_path: Any) -> None:
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "agentsensus.integrations.mcp_server",
        os.fspath(tmp_path / "s"),
        "--transport",
        "streamable-http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + LIMIT
        while True:  # bounded: until the port answers or the deadline
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.1)

        async def session() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as c:
                data(await c.call_tool("remember", {"owner": "hamlet", "statements": [GHOST]}))
                assert data(await c.call_tool("stats", {}))["records"] == 1

        asyncio.run(asyncio.wait_for(session(), LIMIT))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--embedder", "word2vec"], "unknown embedder 'word2vec'"),
        (["--judge", "maybe"], "unknown judge spec 'maybe'"),
    ],
)
def test_bad_options_fail_in_one_line(tmp_path: Any, capsys: Any, args: list[str], message: str) -> None:
    path = os.fspath(tmp_path / "s")
    assert cli.main(["mcp", path, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentsensus mcp: ") and message in err and len(err.strip().splitlines()) == 1
    assert not os.path.exists(path)  # refused before the store is made


def test_a_store_of_another_dim_is_refused(tmp_path: Any, capsys: Any) -> None:
    path = os.fspath(tmp_path / "s")
    Store(path, dim=8).close()
    assert cli.main(["mcp", path, "--embedder", "hash"]) == 2
    err = capsys.readouterr().err
    assert "dim" in err and len(err.strip().splitlines()) == 1
    assert embedders.hash.dim != 8
