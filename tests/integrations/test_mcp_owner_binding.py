"""``agentsensus mcp`` bound to an owner (``--owner``, or a bearer token per HTTP request):
the tools see and touch that owner's records alone. Real server processes, the ``mcp`` SDK's client."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from typing import Any, Optional

import httpx2
import pytest
from agentsensus import Store, cli, embedders
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from slow_clients import ENV, LIMIT, free_port, start, stop

pytestmark = pytest.mark.slow  # servers in other processes

ALICE = ["Alice keeps the key under the mat", "Alice waters the ferns on Sunday"]
ALICE_WORK = ["Alice ships the release on Friday"]
BOB = ["Bob hides the letters in the piano", "Bob's bank code is 4471"]
BOB_WORK = ["Bob's salary is in the work ledger"]
SHARED = "The train leaves at noon"
PLANFENCE = {"publish", "derive", "check_plan"}


def seed(path: str) -> dict[str, list[int]]:
    """A store with alice's and bob's records in two scopes and one record
    they share; each owner's ids."""
    with Store(path, dim=embedders.hash.dim, embed=embedders.hash) as s:
        ids = {
            "alice": s.deposit("alice", ALICE).ids + s.deposit("alice", ALICE_WORK, scope="work").ids,
            "bob": s.deposit("bob", BOB).ids + s.deposit("bob", BOB_WORK, scope="work").ids,
        }
        shared = s.deposit("alice", [SHARED]).ids + s.deposit("bob", [SHARED]).ids
        assert shared[0] == shared[1]
        ids["alice"].append(shared[0])
        ids["bob"].append(shared[0])
    return ids


def stdio(path: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "agentsensus.integrations.mcp_server", path, *args], env=ENV
    )


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


def every_id(path: str) -> list[int]:
    with Store(path) as s:
        return [m.id for m in s.records()]


def test_a_server_bound_to_alice_never_shows_or_forgets_bobs_records(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    ids = seed(path)
    everything = every_id(path)
    missing = max(everything) + 1
    bobs_own = sorted(set(ids["bob"]) - set(ids["alice"]))

    async def session() -> None:
        async with Client(stdio(path, "--owner", "alice")) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert all("owner" not in t.input_schema.get("properties", {}) for t in tools.values())
            # What a missing id gets, from each tool that takes one.
            absent = {tool: error(await c.call_tool(tool, {"id": missing})) for tool in ("get", "forget")}
            assert all(f"no record {missing}" in text for text in absent.values())

            def as_missing(tool: str, i: int) -> str:
                return absent[tool].replace(f"no record {missing}", f"no record {i}")

            for i in everything:  # every id the store has
                got = await c.call_tool("get", {"id": i})
                if i in ids["alice"]:
                    assert "alice" in data(got)["owners"]
                else:  # bob's alone: the very answer a missing id gets
                    assert error(got) == as_missing("get", i)
            for i in bobs_own:
                assert error(await c.call_tool("forget", {"id": i})) == as_missing("forget", i)
            listed = data(await c.call_tool("list_memories", {}))["memories"]
            assert sorted(m["id"] for m in listed) == sorted(ids["alice"])
            for text in BOB + BOB_WORK:  # recall of bob's exact words finds none of bob's records
                found = data(await c.call_tool("recall", {"query": text, "k": 10}))["memories"]
                assert found and all("alice" in m["owners"] for m in found)
            stats = data(await c.call_tool("stats", {}))
            assert stats == {"owner": "alice", "scope": None, "records": 4, "shared": 1, "max_owners": 2}
            # An owner argument is refused, not quietly ignored.
            assert "owner" in error(await c.call_tool("list_memories", {"owner": "bob"}))
            assert "owner" in error(await c.call_tool("forget", {"owner": "bob", "id": bobs_own[0]}))

    asyncio.run(asyncio.wait_for(session(), LIMIT))
    with Store(path) as s:  # bob's records are all still his
        assert sorted(s.owned("bob")) == sorted(ids["bob"])


def test_a_bound_scope_shows_only_that_scope(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    ids = seed(path)

    async def session() -> int:
        async with Client(stdio(path, "--owner", "alice", "--scope", "work")) as c:
            listed = data(await c.call_tool("list_memories", {}))["memories"]
            assert [m["text"] for m in listed] == ALICE_WORK
            for i in ids["alice"]:
                got = await c.call_tool("get", {"id": i})
                assert got.is_error == (i != listed[0]["id"])
            found = data(await c.call_tool("recall", {"query": ALICE[0], "k": 10}))["memories"]
            assert [m["text"] for m in found] == ALICE_WORK
            new = data(await c.call_tool("remember", {"statements": ["Alice books the venue"]}))["ids"][0]
            assert data(await c.call_tool("stats", {}))["records"] == 2
            return int(new)

    new = asyncio.run(asyncio.wait_for(session(), LIMIT))
    with Store(path) as s:
        assert s.scope_of(new) == "work"


def test_recall_threshold_drops_a_low_scored_hit(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    seed(path)

    async def session() -> None:
        async with Client(stdio(path, "--owner", "alice")) as c:
            ask = {"query": ALICE[0], "k": 2, "expand": False}
            hits = data(await c.call_tool("recall", ask))["memories"]
            assert len(hits) == 2 and hits[0]["score"] > hits[1]["score"]
            between = (hits[0]["score"] + hits[1]["score"]) / 2
            kept = data(await c.call_tool("recall", {**ask, "threshold": between}))["memories"]
            assert [m["id"] for m in kept] == [hits[0]["id"]]
            assert "extra" in error(await c.call_tool("recall", {**ask, "min_score": between})).lower()

    asyncio.run(asyncio.wait_for(session(), LIMIT))


def test_every_tool_parameter_is_described_and_no_planfence_hides_its_tools(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")

    async def tools(*args: str) -> dict[str, Any]:
        async with Client(stdio(path, *args)) as c:
            return {t.name: t for t in (await c.list_tools()).tools}

    async def session() -> None:
        for args in ((), ("--owner", "alice")):
            served = await tools(*args)
            assert PLANFENCE <= set(served)
            for t in served.values():
                assert t.description
                assert t.input_schema.get("additionalProperties") is False, t.name
                for name, prop in t.input_schema.get("properties", {}).items():
                    assert isinstance(prop.get("description"), str) and prop["description"].strip(), (t.name, name)
            hidden = await tools(*args, "--no-planfence")
            assert set(hidden) == set(served) - PLANFENCE

    asyncio.run(asyncio.wait_for(session(), LIMIT))


# -- over HTTP: a bearer token per request -------------------------------------------------


def token_file(tmp_path: Any, lines: str) -> str:
    path = os.fspath(tmp_path / f"tokens-{len(os.listdir(tmp_path))}")
    with open(path, "w") as f:
        f.write(lines)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    return path


def post_initialize(url: str, authorization: Optional[str]) -> int:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    return httpx2.post(url, headers=headers, content=json.dumps(body), timeout=30).status_code


def test_http_tokens_bind_each_connection_to_its_owner(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    ids = seed(path)
    alice_token, bob_token = "a" * 12 + "-alice-token", "b" * 12 + "-bob-token"
    bob_at_work = "w" * 12 + "-bob-at-work"
    tokens = token_file(
        tmp_path, f"# token owner [scope]\n{alice_token} alice\n{bob_token} bob\n{bob_at_work} bob work\n"
    )
    port = free_port()
    cmd = [sys.executable, "-m", "agentsensus.integrations.mcp_server", path, "--transport", "streamable-http"]
    proc = start([*cmd, "--port", str(port), "--tokens", tokens], port)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wrong = ["not-a-token-of-this-server", alice_token[:-1], alice_token + "x", alice_token.upper()]
        for authorization in [None, alice_token, f"Basic {alice_token}", *(f"Bearer {t}" for t in wrong)]:
            assert post_initialize(url, authorization) == 401
        assert post_initialize(url, f"Bearer {alice_token}") == 200

        async def as_owner(token: str) -> tuple[set[int], dict[str, Any]]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http)) as c:
                    tools = (await c.list_tools()).tools
                    assert all("owner" not in t.input_schema.get("properties", {}) for t in tools)
                    seen = set()
                    for i in every_id(path):
                        if not (await c.call_tool("get", {"id": i})).is_error:
                            seen.add(i)
                    listed = {m["id"] for m in data(await c.call_tool("list_memories", {}))["memories"]}
                    assert listed == seen
                    return seen, data(await c.call_tool("stats", {}))

        seen, stats = asyncio.run(asyncio.wait_for(as_owner(alice_token), LIMIT))
        assert seen == set(ids["alice"]) and stats["owner"] == "alice" and stats["records"] == len(ids["alice"])
        seen, stats = asyncio.run(asyncio.wait_for(as_owner(bob_token), LIMIT))
        assert seen == set(ids["bob"]) and stats["owner"] == "bob" and stats["records"] == len(ids["bob"])
        seen, stats = asyncio.run(asyncio.wait_for(as_owner(bob_at_work), LIMIT))
        assert seen == {ids["bob"][len(BOB)]} and (stats["owner"], stats["scope"]) == ("bob", "work")
    finally:
        assert stop(proc) == 0


def test_a_non_loopback_host_without_tokens_is_refused(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    env = {k: v for k, v in ENV.items() if k != "AGENTSENSUS_MCP_TOKENS"}
    for owner in ([], ["--owner", "alice"]):
        cmd = [sys.executable, "-m", "agentsensus.cli", "mcp", path, "--transport", "streamable-http"]
        # A process with a bound: a server that does not refuse would serve until killed.
        done = subprocess.run(
            [*cmd, "--host", "0.0.0.0", "--port", "0", *owner], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2
        assert done.stderr.startswith("agentsensus mcp: host '0.0.0.0' is not a loopback address")
        assert "--tokens" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not os.path.exists(path)  # refused before the store is made


def test_bad_token_tables_are_refused_in_one_line(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    path = os.fspath(tmp_path / "s")
    http = ["mcp", path, "--transport", "streamable-http"]
    good = "t" * 20
    cases = [
        (["--tokens", token_file(tmp_path, f"{good}\n")], "expected 'token owner [scope]'"),
        (["--tokens", token_file(tmp_path, "short alice\n")], "at least 16 bytes"),
        (["--tokens", token_file(tmp_path, f"{good} alice\n{good} bob\n")], "appears twice"),
        (["--tokens", token_file(tmp_path, '[{"token": "' + good + '"}]')], '"owner"'),
        (["--tokens", token_file(tmp_path, f"{good} alice\n"), "--owner", "alice"], "exclude each other"),
    ]
    for args, message in cases:
        assert cli.main([*http, *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    open_file = token_file(tmp_path, f"{good} alice\n")
    os.chmod(open_file, 0o644)
    assert cli.main([*http, "--tokens", open_file]) == 2
    assert "chmod 600" in capsys.readouterr().err
    monkeypatch.setenv("AGENTSENSUS_MCP_TOKENS", "nonsense")
    assert cli.main(http) == 2
    assert "AGENTSENSUS_MCP_TOKENS, line 1" in capsys.readouterr().err
    assert not os.path.exists(path)
