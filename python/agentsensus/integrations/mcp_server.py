"""``agentsensus mcp PATH``: a store served over the Model Context Protocol.

Built on the official SDK (``mcp``, the ``mcp`` extra:
``pip install 'agentsensus[mcp]'``). Run it as ``agentsensus mcp PATH`` or
``python -m agentsensus.integrations.mcp_server PATH``; it speaks MCP over
stdio (what desktop clients launch) or, with ``--transport
streamable-http``, over HTTP on ``--host``/``--port`` (127.0.0.1:8000 by
default).

Tools: ``remember`` (deposit statements as an owner), ``recall``, ``get``,
``list_memories``, ``forget``, ``stats``, and for Planfence ``publish``,
``derive`` and ``check_plan``. The owner is a tool argument unless
``--owner NAME`` fixes it for the whole server (one agent's configuration
in a client); then no tool takes it. Texts are embedded with ``--embedder``
(``hash``, ``minilm``, ``sentence_transformers:NAME`` or
``openai:MODEL``), which the store records: a later run without the flag
serves it with the recorded one (``hash`` for a new store or one that
records none), and a different one is refused. Bad tool input comes back to the client as a tool error
with a one-line message; nothing is written.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from dataclasses import asdict
from typing import Any, Callable, Optional, Sequence

from .. import embedders
from ..errors import Error
from ..records import Memory
from ..store import Store
from .judge_spec import judge_from_spec

__all__ = ["build_server", "embedder_from_name", "main"]

Embed = Callable[[list[str]], Any]


def embedder_from_name(name: str) -> Embed:
    """The embedder ``--embedder`` names: ``hash``, ``minilm``,
    ``sentence_transformers:NAME`` or ``openai:MODEL`` (see
    :func:`agentsensus.embedders.from_name`)."""
    e: Embed = embedders.from_name(name)
    return e


def _memory(m: Memory) -> dict[str, Any]:
    return {"id": m.id, "text": m.text, "owners": sorted(m.owners), "round": m.round, "score": m.score, "via": m.via}


class _Tools:
    """The tools over one open store; each takes the owner explicitly (the
    server wraps them when ``--owner`` fixes it)."""

    def __init__(self, store: Store, embed: Embed) -> None:
        self.store = store
        self.embed = embed

    def remember(self, owner: str, statements: list[str]) -> dict[str, Any]:
        if isinstance(statements, str):
            statements = [statements]
        d = self.store.deposit(owner, statements, self.embed(list(statements)))
        return {"ids": d.ids, "merged": d.merged}

    def recall(self, owner: str, query: str, k: int = 5, expand: bool = True) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty text")
        found = self.store.recall(owner, self.embed([query]), k=k, expand=expand)
        return {"memories": [_memory(m) for m in found]}

    def get(self, id: int) -> dict[str, Any]:
        return _memory(self.store.get(id))

    def list_memories(self, owner: str) -> dict[str, Any]:
        return {"memories": [_memory(self.store.get(i)) for i in self.store.owned(owner)]}

    def forget(self, owner: str, id: int) -> dict[str, Any]:
        self.store.forget(owner, id)
        return {"forgotten": id}

    def stats(self) -> dict[str, Any]:
        return asdict(self.store.stats())

    def publish(self, key: str, owner: str, value: str) -> dict[str, Any]:
        return {"key": key, "version": self.store.fence.publish(key, owner, value)}

    def derive(self, key: str, owner: str, value: str, inputs: dict[str, int]) -> dict[str, Any]:
        return {"key": key, "version": self.store.fence.derive(key, owner, value, inputs)}

    def check_plan(self, key: str, scope: Optional[list[str]] = None) -> dict[str, Any]:
        c = self.store.fence.check(key, scope=scope)
        stale = [
            {"key": s.key, "owner": s.owner, "recorded": s.recorded, "head": s.head, "reason": s.reason}
            for s in c.stale
        ]
        return {"current": c.current, "stale": stale, "owners_asked": c.owners_asked}


def build_server(store: Store, embed: Embed, *, owner: Optional[str] = None, name: str = "agentsensus") -> Any:
    """An ``mcp`` ``MCPServer`` with the store's tools (``owner`` fixes the
    owner of every tool). The caller runs it and closes the store after."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from .._version import __version__

    server = MCPServer(
        name,
        version=__version__,
        instructions="Consensus long-term memory shared by many agents: remember statements as an owner, "
        "recall what that owner holds; the same fact from two owners is stored once with both as owners.",
    )
    t = _Tools(store, embed)

    def add(fn: Callable[..., Any], name: str, doc: str, *, reads: bool = False) -> None:
        hints = ToolAnnotations(read_only_hint=True) if reads else None
        server.add_tool(_told(fn), name=name, description=doc, annotations=hints)

    tools: dict[str, Callable[..., Any]] = (
        {
            "remember": t.remember,
            "recall": t.recall,
            "list_memories": t.list_memories,
            "forget": t.forget,
            "publish": t.publish,
            "derive": t.derive,
        }
        if owner is None
        else _fixed_owner(t, owner)
    )
    who = "the owner" if owner is None else repr(owner)
    add(
        tools["remember"],
        "remember",
        f"Stores statements (short facts) as {who}. A statement that states a fact "
        "already stored merges into that record, which gains the owner. Returns each statement's record id and "
        "whether it merged.",
    )
    add(
        tools["recall"],
        "recall",
        f"The k records {who} owns nearest the query text, best first, with their owners and "
        "scores; with expand, also the records one affiliation edge away.",
        reads=True,
    )
    add(t.get, "get", "One record by id: its text, owners and round.", reads=True)
    add(tools["list_memories"], "list_memories", f"Every record {who} owns, oldest first.", reads=True)
    add(tools["forget"], "forget", f"Record id is forgotten by {who}; records other owners hold stay theirs.")
    add(t.stats, "stats", "The store's counts: records, deposits, merges, shared records, owners.", reads=True)
    add(
        tools["publish"],
        "publish",
        f"Planfence: a new version of base input key (owned by {who}) with this value; returns the version.",
    )
    add(
        tools["derive"],
        "derive",
        f"Planfence: a new version of derived item key (a plan, owned by {who}) made from the "
        "exact input versions given (key -> version); returns the version.",
    )
    add(
        t.check_plan,
        "check_plan",
        "Planfence: is plan key current? Walks its links to the inputs it was derived "
        "from and reports each input that moved since (stale), optionally cut to scope.",
        reads=True,
    )
    return server


def _fixed_owner(t: _Tools, owner: str) -> dict[str, Callable[..., Any]]:
    """The owner's tools without an owner argument (``--owner``)."""

    def remember(statements: list[str]) -> dict[str, Any]:
        return t.remember(owner, statements)

    def recall(query: str, k: int = 5, expand: bool = True) -> dict[str, Any]:
        return t.recall(owner, query, k, expand)

    def list_memories() -> dict[str, Any]:
        return t.list_memories(owner)

    def forget(id: int) -> dict[str, Any]:
        return t.forget(owner, id)

    def publish(key: str, value: str) -> dict[str, Any]:
        return t.publish(key, owner, value)

    def derive(key: str, value: str, inputs: dict[str, int]) -> dict[str, Any]:
        return t.derive(key, owner, value, inputs)

    return {
        "remember": remember,
        "recall": recall,
        "list_memories": list_memories,
        "forget": forget,
        "publish": publish,
        "derive": derive,
    }


def _told(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with bad input reported to the client: the SDK shows the model
    a ``ToolError``'s message, and only a generic one for other exceptions."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)  # keeps the signature the SDK builds the schema from
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError, KeyError, Error) as e:
            message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
            raise ToolError(message) from e

    return tool


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agentsensus mcp", description="Serve a store over the Model Context Protocol (stdio by default)."
    )
    p.add_argument("path", help="the store's directory (created when missing)")
    p.add_argument("--owner", help="fix the owner of every tool (the tools then take no owner argument)")
    p.add_argument(
        "--embedder",
        default=None,
        help="hash, minilm, sentence_transformers:NAME or openai:MODEL; the store records it, and a later run "
        "without the flag uses the recorded one (hash for a new store or one that records none)",
    )
    p.add_argument("--judge", default="exact", help="exact (default), never, threshold:X or llm:MODEL@URL")
    p.add_argument("--min-similarity", type=float, default=0.75, help="the least score of a judge's candidate")
    p.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="streamable-http: the address to listen on")
    p.add_argument("--port", type=int, default=8000, help="streamable-http: the port (default 8000)")
    p.add_argument("--name", default="agentsensus", help="the server name clients see")
    return p


def _open(path: str, embed: Optional[Embed], judge: Any, min_similarity: float) -> Store:
    """The store, with ``embed`` or else the embedder it records: ``hash``
    for a new store (then recorded), and for one from before stores recorded
    their embedder (the default of those versions; not recorded, so a later
    ``--embedder`` may still name the one it was written with)."""
    if embed is None and not os.path.exists(os.path.join(path, "data.mdb")):
        embed = embedders.hash
    store = Store(path, dim=getattr(embed, "dim", None), embed=embed, judge=judge, min_similarity=min_similarity)
    if store.embed is None:
        why = None
        if store.embedder_name == "":
            why = "was created with an unnamed embedder"
        elif store.dim != embedders.hash.dim:
            why = f"records no embedder and has dim {store.dim}, not hash's {embedders.hash.dim}"
        if why is not None:
            store.close()
            raise ValueError(f"the store at {path} {why}: pass --embedder")
        store.embed = embedders.hash
    return store


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``agentsensus mcp`` (and of ``python -m``)."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        embed = embedder_from_name(args.embedder) if args.embedder is not None else None
        judge = judge_from_spec(args.judge)
    except (ValueError, TypeError, ImportError) as e:
        print(f"agentsensus mcp: {e}", file=sys.stderr)
        return 2
    try:
        import mcp  # noqa: F401  (fail here, with advice)
    except ImportError:
        print("agentsensus mcp: needs the mcp package: pip install 'agentsensus[mcp]'", file=sys.stderr)
        return 2
    try:
        store = _open(args.path, embed, judge, args.min_similarity)
    except (ValueError, TypeError, OSError, ImportError, Error) as e:
        print(f"agentsensus mcp: {e}", file=sys.stderr)
        return 2
    try:
        assert store.embed is not None
        server = build_server(store, store.embed, owner=args.owner, name=args.name)
        if args.transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=args.host, port=args.port)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
