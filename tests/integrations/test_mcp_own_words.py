"""``agentsensus mcp --disclosure own_words``: a bound owner's tools show only
its own words and itself as owner, and a prober's merge changes nothing the
victim reads. Real server processes, the ``mcp`` SDK's client."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
from agentsensus import Store, cli, embedders
from mcp import Client, StdioServerParameters
from slow_clients import ENV, LIMIT

VICTIM = ["Alice hid the spare key under the old flowerpot", "Alice waters the ferns on Sunday"]
PROBE = "Alice hid the spare key somewhere"  # shorter, the same names: keep_names keeps it
MERGING = ["--judge", "threshold:0.5", "--min-similarity", "0.5"]  # the two key statements score 0.65


def server(path: str, owner: str, *extra: str) -> StdioServerParameters:
    args = ["-m", "agentsensus.integrations.mcp_server", path, "--owner", owner, *MERGING, *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=ENV)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


async def reads(c: Client) -> dict[str, Any]:
    """Every read tool's answer: recall of each victim statement and the probe, get of every listed id, stats."""
    listed = data(await c.call_tool("list_memories", {}))["memories"]
    return {
        "recall": [data(await c.call_tool("recall", {"query": q, "k": 5})) for q in [*VICTIM, PROBE]],
        "list": listed,
        "get": [data(await c.call_tool("get", {"id": m["id"]})) for m in listed],
        "stats": data(await c.call_tool("stats", {})),
    }


def texts_and_owners(seen: dict[str, Any]) -> set[tuple[str, tuple[str, ...]]]:
    rows = [m for r in seen["recall"] for m in r["memories"]] + seen["list"] + seen["get"]
    return {(m["text"], tuple(m["owners"])) for m in rows}


def probe(path: str, disclosure: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any]:
    """alice's reads, bob's probe and his reads, alice's reads again."""
    flag = ["--disclosure", disclosure]

    async def session() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any]:
        async with Client(server(path, "alice", *flag)) as alice:
            await alice.call_tool("remember", {"statements": VICTIM})
            before = await reads(alice)
        async with Client(server(path, "bob", *flag)) as bob:
            verdict = data(await bob.call_tool("remember", {"statements": [PROBE]}))
            bobs = await reads(bob)
        async with Client(server(path, "alice", *flag)) as alice:
            after = await reads(alice)
        return before, bobs, after, verdict

    return asyncio.run(asyncio.wait_for(session(), LIMIT))


def test_own_words_tools_show_only_the_owners_words_and_a_probe_changes_nothing(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    before, bobs, after, verdict = probe(path, "own_words")
    assert verdict["merged"] == [True]  # what the probe learns: that its statement merged
    with Store(path, embed=embedders.hash) as s:
        assert s.get(verdict["ids"][0]).text == PROBE  # keep_names rewrote alice's record to bob's words
    assert texts_and_owners(bobs) == {(PROBE, ("bob",))}
    assert bobs["stats"] == {"owner": "bob", "scope": None, "records": 1}  # no shared count
    assert texts_and_owners(after) == {(t, ("alice",)) for t in VICTIM}
    assert after == before


def test_shared_disclosure_shows_the_probe_the_victims_words(tmp_path: Any) -> None:
    """The default the option guards against: bob reads alice's name as owner, and she reads his words."""
    before, bobs, after, _ = probe(os.fspath(tmp_path / "s"), "shared")
    assert (PROBE, ("alice", "bob")) in texts_and_owners(bobs)
    assert (PROBE, ("alice", "bob")) in texts_and_owners(after) and after != before
    assert bobs["stats"]["shared"] == 1


def test_a_bad_disclosure_flag_is_refused_before_the_store_is_made(tmp_path: Any, capsys: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with pytest.raises(SystemExit) as exit:
        cli.main(["mcp", path, "--disclosure", "everything"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert "--disclosure: invalid choice: 'everything'" in err
    assert not os.path.exists(path)
