"""``agentsensus mcp PATH``: a store served over the Model Context Protocol.

Built on the official SDK (``mcp``, the ``mcp`` extra:
``pip install 'agentsensus[mcp]'``). Run it as ``agentsensus mcp PATH`` or
``python -m agentsensus.integrations.mcp_server PATH``; it speaks MCP over
stdio (what desktop clients launch) or, with ``--transport
streamable-http``, over HTTP on ``--host``/``--port`` (127.0.0.1:8000 by
default).

Tools: ``remember`` (deposit statements as an owner), ``recall``, ``get``,
``list_memories``, ``forget``, ``stats``, and for Planfence ``publish``,
``derive`` and ``check_plan`` (``--no-planfence`` leaves them out). The
owner is a tool argument unless the server is bound: ``--owner NAME`` binds
it to NAME, and over HTTP a token table (``--tokens FILE`` or
``AGENTSENSUS_MCP_TOKENS``, `mcp_tokens`) binds each request to its
bearer token's owner (401 without one); a bound tool takes no owner and sees
only that owner's records (`mcp_tools`). A non-loopback ``--host``
needs tokens. Over HTTP, `mcp_http` adds a request deadline, a
connection cap below the descriptor limit and a prompt exit on SIGTERM.
``--disclosure own_words`` shows each owner only its own statements and
itself as owner (docs/reference/store.md, "What an owner reads"; ``shared``, the default,
shows records as merged). Texts are embedded with ``--embedder``
(``hash``, ``minilm``, ``sentence_transformers:NAME`` or
``openai:MODEL``), which the store records: a later run without the flag
serves it with the recorded one (``hash`` for a new store or one that
records none), and a different one is refused. Bad tool input comes back to the client as a tool error
with a one-line message; nothing is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Optional, Sequence

from .. import embedders
from .._net.listen_guard import connection_cap, refuse_open_host
from .._store.scopes import check_scope
from .._store.validation import check_owner
from ..errors import Error
from ..store import Store
from .judge_spec import judge_from_spec
from .mcp_tokens import ENV_VAR, Binding, TokenTable, parse_tokens, read_tokens

__all__ = ["build_server", "embedder_from_name", "main"]

Embed = Callable[[list[str]], Any]


def embedder_from_name(name: str) -> Embed:
    """The embedder ``--embedder`` names: ``hash``, ``minilm``,
    ``sentence_transformers:NAME`` or ``openai:MODEL`` (see
    `agentsensus.embedders.from_name`)."""
    e: Embed = embedders.from_name(name)
    return e


def build_server(
    store: Store,
    embed: Embed,
    *,
    owner: Optional[str] = None,
    scope: Optional[str] = None,
    tokens: Optional[dict[str, Binding]] = None,
    planfence: bool = True,
    name: str = "agentsensus",
) -> Any:
    """An ``mcp`` ``MCPServer`` with the store's tools. ``owner`` (and
    ``scope``) binds every tool to that owner's view; ``tokens`` (token ->
    `Binding`) binds each HTTP request to its bearer token's owner and
    refuses one without a valid token (401); with neither, the tools take an
    ``owner`` argument. ``planfence=False`` leaves out the Planfence tools.
    The caller runs it and closes the store after."""
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import ToolAnnotations
    from pydantic import AnyHttpUrl

    from .._version import __version__
    from .mcp_tools import PLANFENCE_TOOLS, Tools, make_tools, strict

    if owner is not None and tokens is not None:
        raise ValueError("owner and tokens exclude each other: the tokens name the owners")
    if scope is not None and owner is None:
        raise ValueError("scope binds an owner's view: it needs owner")
    t = Tools(store, embed)
    who: Optional[Callable[[], Binding]] = None
    as_whom = "the owner"
    verifier: Optional[TokenTable] = None
    if owner is not None:
        fixed = Binding(check_owner(owner), None if scope is None else check_scope(scope))
        who, as_whom = (lambda: fixed), repr(fixed.owner)
    elif tokens is not None:
        verifier = TokenTable(tokens)
        who, as_whom = _token_binding, "the connection's owner (its bearer token's)"
    tools = [
        strict(
            Tool.from_function(
                fn,
                name=tool_name,
                description=doc,
                annotations=ToolAnnotations(read_only_hint=True) if reads else None,
            )
        )
        for tool_name, fn, doc, reads in make_tools(t, who, as_whom)
        if planfence or tool_name not in PLANFENCE_TOOLS
    ]
    # The SDK's bearer auth: 401 without a valid token, and a session kept to
    # the token that opened it. The issuer URL is required by its settings
    # but unused (no OAuth routes: the tokens are configured, not issued).
    auth = AuthSettings(issuer_url=AnyHttpUrl("http://localhost"), resource_server_url=None) if verifier else None
    return MCPServer(
        name,
        version=__version__,
        instructions="Consensus long-term memory shared by many agents: remember statements as an owner, "
        "recall what that owner holds; the same fact from two owners is stored once with both as owners.",
        tools=tools,
        token_verifier=verifier,
        auth=auth,
    )


def _token_binding() -> Binding:
    b = TokenTable.current()
    if b is None:  # the SDK answers 401 before a tool runs; this guards a change there
        raise ValueError("not authenticated")
    return b


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="agentsensus mcp", description="Serve a store over the Model Context Protocol (stdio by default)."
    )
    p.add_argument("path", help="the store's directory (created when missing)")
    p.add_argument(
        "--owner",
        help="serve this owner alone: every tool acts as it and sees only its records (no owner argument)",
    )
    p.add_argument("--scope", help="with --owner: deposit into this scope and see only its records")
    p.add_argument(
        "--tokens",
        metavar="FILE",
        help=f"streamable-http: bearer tokens binding each request to an owner (lines 'token owner [scope]', "
        f"or JSON; chmod 600); {ENV_VAR} may hold the same instead",
    )
    p.add_argument("--no-planfence", action="store_true", help="leave out the publish, derive and check_plan tools")
    p.add_argument(
        "--embedder",
        default=None,
        help="hash, minilm, sentence_transformers:NAME or openai:MODEL; the store records it, and a later run "
        "without the flag uses the recorded one (hash for a new store or one that records none)",
    )
    p.add_argument("--judge", default="exact", help="exact (default), never, threshold:X or llm:MODEL@URL")
    p.add_argument("--min-similarity", type=float, default=0.75, help="the least score of a judge's candidate")
    p.add_argument(
        "--disclosure",
        choices=["shared", "own_words"],
        default="shared",
        help="what an owner's reads show of records others share: the merged text and every owner (shared, "
        "the default) or only its own statement and itself (own_words)",
    )
    p.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="streamable-http: the address to listen on")
    p.add_argument("--port", type=int, default=8000, help="streamable-http: the port (default 8000)")
    p.add_argument(
        "--request-timeout",
        type=float,
        default=10.0,
        help="streamable-http: seconds a connection has to send a whole request (headers and body; default 10)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=256,
        help="streamable-http: connections held at once (default 256, lowered to what the descriptor limit leaves)",
    )
    p.add_argument("--name", default="agentsensus", help="the server name clients see")
    return p


def _tokens(args: argparse.Namespace) -> Optional[dict[str, Binding]]:
    """The token table of ``--tokens`` or of the environment (HTTP only);
    ``ValueError`` for a combination that makes no sense."""
    http = args.transport == "streamable-http"
    if args.tokens is not None:
        if not http:
            raise ValueError("--tokens is for --transport streamable-http (stdio serves one client)")
        if args.owner is not None:
            raise ValueError("--owner and --tokens exclude each other: the tokens name the owners")
        return read_tokens(args.tokens)
    env = os.environ.get(ENV_VAR)
    if not http or env is None:
        return None
    if args.owner is not None:
        raise ValueError(f"--owner and {ENV_VAR} exclude each other: the tokens name the owners")
    return parse_tokens(env, ENV_VAR)


def _check_options(args: argparse.Namespace) -> Optional[dict[str, Binding]]:
    """Every option checked before the store is opened; returns the tokens."""
    if args.owner is not None:
        check_owner(args.owner)
    if args.scope is not None:
        if args.owner is None:
            raise ValueError("--scope needs --owner (a token names its own scope)")
        check_scope(args.scope)
    tokens = _tokens(args)
    if args.transport == "streamable-http":
        refuse_open_host(
            args.host,
            tokens is not None,
            lacks="the server has no tokens",
            exposes="read and change its memories",
            remedy=f"Pass --tokens FILE or set {ENV_VAR}",
        )
        if not args.request_timeout > 0:
            raise ValueError(f"--request-timeout must be a positive number of seconds, got {args.request_timeout}")
        connection_cap(args.max_connections)
    return tokens


def _open(path: str, embed: Optional[Embed], judge: Any, min_similarity: float, disclosure: str = "shared") -> Store:
    """The store, with ``embed`` or else the embedder it records: ``hash``
    for a new store (then recorded), and for one from before stores recorded
    their embedder (the default of those versions; not recorded, so a later
    ``--embedder`` may still name the one it was written with)."""
    if embed is None and not os.path.exists(os.path.join(path, "data.mdb")):
        embed = embedders.hash
    store = Store(
        path,
        dim=getattr(embed, "dim", None),
        embed=embed,
        judge=judge,
        min_similarity=min_similarity,
        disclosure=disclosure,
    )
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
    """Entry point of ``agentsensus mcp`` (and of ``python -m``). A refusal
    (a bad option, a non-loopback host without tokens, a store that cannot
    be opened) is one line on stderr and exit status 2, before the store is
    touched. Over HTTP it serves until SIGTERM or SIGINT, then exits 0."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        tokens = _check_options(args)
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
        store = _open(args.path, embed, judge, args.min_similarity, args.disclosure)
    except (ValueError, TypeError, OSError, ImportError, Error) as e:
        print(f"agentsensus mcp: {e}", file=sys.stderr)
        return 2
    try:
        assert store.embed is not None
        server = build_server(
            store,
            store.embed,
            owner=args.owner,
            scope=args.scope,
            tokens=tokens,
            planfence=not args.no_planfence,
            name=args.name,
        )
        if args.transport == "stdio":
            server.run("stdio")
        else:
            from .mcp_http import serve

            serve(
                server.streamable_http_app(host=args.host),
                args.host,
                args.port,
                request_timeout=args.request_timeout,
                max_connections=args.max_connections,
                log_level=server.settings.log_level.lower(),
            )
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
