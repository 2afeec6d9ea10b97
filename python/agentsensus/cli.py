"""The ``agentsensus`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from typing import Any, Optional, Sequence

from .records import Memory

__all__ = ["main"]


def _stats(args: argparse.Namespace) -> int:
    from .store import Store

    with Store(args.path, create=False, readonly=True) as s:
        st = asdict(s.stats())
    if args.json:
        print(json.dumps(st))
    else:
        for k, v in st.items():
            print(f"{k:>11}  {v}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from . import _core
    from .store import Store

    # The file's page structure first, read without LMDB's memory map: it
    # reports damage in every page, not only in those a read reaches.
    damage = list(_core.check_pages(args.path)) if os.path.isfile(os.path.join(args.path, "data.mdb")) else []
    if damage:
        if args.json:
            print(json.dumps({"sound": False, "problems": damage}))
        else:
            print("\n".join(damage))
            print("the file's pages are damaged: --repair cannot fix that; restore a backup", file=sys.stderr)
        return 1
    with Store(args.path, create=False, readonly=not args.repair) as s:
        if args.repair:
            s._handles().engine.check_alone()  # repair rebuilds tables others are reading: refused up front
        problems = s.verify()
        if problems and not args.repair:
            # One snapshot has nothing in flux; a second read confirms, so
            # that only what stays broken across snapshots is reported.
            again = set(s.verify())
            problems = [p for p in problems if p in again]
        if problems and args.repair:
            print(f"{len(problems)} problem(s) found; repairing", file=sys.stderr)
            s.repair()
            problems = s.verify()
    old_items = os.path.join(args.path, "langgraph.sqlite3")
    if os.path.exists(old_items):  # an earlier version's LangGraph items, outside the store
        problems = [
            *problems,
            f"{old_items} holds LangGraph items outside the store: open it once with "
            f"ConsensusStore({args.path!r}) to move them in",
        ]
    if args.json:
        print(json.dumps({"sound": not problems, "problems": problems}))
    elif problems:
        for p in problems:
            print(p)
    else:
        print("ok")
    return 1 if problems else 0


def _compact(args: argparse.Namespace) -> int:
    from .io.compact import compact

    r = compact(args.path)
    if args.json:
        print(json.dumps(r._asdict()))
    else:
        print(f"data.mdb: {r.before} -> {r.after} bytes")
    return 0


def _memory_json(m: Memory) -> dict[str, Any]:
    d = asdict(m)
    d["owners"] = sorted(m.owners)
    # JSON has no datetime: the record's times go out as ISO 8601 (UTC), None as null.
    for k in ("created_at", "updated_at"):
        d[k] = d[k].isoformat() if d.get(k) is not None else None
    return d


def _show(args: argparse.Namespace) -> int:
    from .store import Store

    with Store(args.path, create=False, readonly=True) as s:
        try:
            m = s.get(args.id)
        except KeyError:
            print(f"agentsensus show: no record {args.id} in {args.path}", file=sys.stderr)
            return 1
        neighbours = [s.get(i) for i in s.neighbors(m.id)]
    if args.json:
        row = {k: v for k, v in _memory_json(m).items() if k not in ("score", "via")}
        row["neighbors"] = [{"id": n.id, "text": n.text, "owners": sorted(n.owners)} for n in neighbours]
        print(json.dumps(row, ensure_ascii=False))
        return 0
    print(f"record {m.id} (round {m.round}): {m.text}")
    print(f"  owners ({len(m.owners)}): {', '.join(sorted(m.owners))}")
    print(f"  neighbours ({len(neighbours)}):")
    for n in neighbours:
        print(f"    {n.id}: {n.text}")
    return 0


def _query_vector(args: argparse.Namespace, dim: int) -> Any:
    """QUERY as a vector: parsed JSON with --vector-json, else embedded with
    the named embedder, which must produce the store's dimension."""
    import numpy as np

    if args.vector_json:
        try:
            return np.asarray(json.loads(args.query), dtype=np.float32)
        except (ValueError, TypeError) as e:
            raise SystemExit(f"agentsensus recall: --vector-json: QUERY is not a JSON array of numbers: {e}") from None
    from . import embedders

    embed = embedders.minilm if args.embedder == "minilm" else embedders.hash
    if embed.dim != dim:
        raise SystemExit(
            f"agentsensus recall: the store's vectors have {dim} dimensions and the {args.embedder} embedder makes {embed.dim}: "
            "pass the query vector with --vector-json"
        )
    return embed([args.query])[0]


def _recall(args: argparse.Namespace) -> int:
    from .store import Store

    with Store(args.path, create=False, readonly=True) as s:
        rows = s.recall(args.owner, _query_vector(args, s.dim), k=args.k, expand=not args.no_expand)
    if args.json:
        print(json.dumps([_memory_json(m) for m in rows], ensure_ascii=False))
        return 0
    for m in rows:
        score = f"{m.score:.3f}" if m.score is not None else "  -  "
        print(f"{m.via:>4} {score} {m.id:>8}  {m.text}  [{', '.join(sorted(m.owners))}]")
    return 0


def _export(args: argparse.Namespace) -> int:
    from .io.export import export_jsonl
    from .store import Store

    with Store(args.path, create=False, readonly=True) as s:
        if args.out == "-":
            counts = export_jsonl(s, sys.stdout)
        else:
            with open(args.out, "w", encoding="utf-8") as f:
                counts = export_jsonl(s, f)
    print(f"exported {counts.records} records, {counts.merges} merges, {counts.keys} lineage keys", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    import time

    from .io.importer import import_jsonl

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.5 or done == total:
            last[0] = now
            share = f" ({100 * done // total}%)" if total else ""
            print(f"\rimported {done:,} of {total:,} records{share}", end="", file=sys.stderr, flush=True)

    try:
        if args.file == "-":
            counts = import_jsonl(sys.stdin, args.path, progress=progress)
        else:
            with open(args.file, encoding="utf-8") as f:
                counts = import_jsonl(f, args.path, progress=progress)
    except (ValueError, FileExistsError) as e:
        print(f"\nagentsensus import: {e}", file=sys.stderr)
        return 1
    print(
        f"\nimported {counts.records} records, {counts.merges} merges, {counts.keys} lineage keys "
        f"({counts.versions} versions) into {args.path}",
        file=sys.stderr,
    )
    return 0


def _one_line(e: BaseException) -> str:
    """An error as the one line the command prints (a KeyError's message
    without its quotes, newlines folded)."""
    msg = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        msg = f"{e.strerror}: {e.filename}"
    return " ".join((msg or type(e).__name__).split())


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``agentsensus`` command. A refusal (bad input, a
    store that is absent, open elsewhere, damaged or full, a file that
    cannot be read or written) prints one line, ``agentsensus COMMAND:
    why``, to standard error and exits 1; never a traceback."""
    from .errors import Error

    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv else ""
    try:
        return _dispatch(argv)
    except (Error, ValueError, TypeError, KeyError, OSError) as e:
        print(f"agentsensus {command}: {_one_line(e)}".replace("agentsensus :", "agentsensus:"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"agentsensus {command}: interrupted", file=sys.stderr)
        return 130


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] == "simulate":
        from .sim import cli_main  # resolved lazily by agentsensus.sim, so typed Any here

        return int(cli_main(argv[1:]))
    if argv and argv[0] == "mcp":
        from .integrations.mcp_server import main as mcp_main

        return mcp_main(argv[1:])
    p = argparse.ArgumentParser(prog="agentsensus", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("simulate", help="run the story-world simulation and write a report")
    sub.add_parser("mcp", help="serve a store over the Model Context Protocol (the mcp extra)")
    st = sub.add_parser("stats", help="print a store's counts")
    st.add_argument("path")
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(fn=_stats)
    ck = sub.add_parser("check", help="verify a store's invariants; exit 0 when sound, 1 when not")
    ck.add_argument("path")
    ck.add_argument("--repair", action="store_true", help="rebuild the index and derived tables from the records")
    ck.add_argument("--json", action="store_true", help="print JSON")
    ck.set_defaults(fn=_check)
    cp = sub.add_parser("compact", help="rewrite a closed store without free pages (forgotten text leaves the file)")
    cp.add_argument("path")
    cp.add_argument("--json", action="store_true", help="print JSON")
    cp.set_defaults(fn=_compact)
    sh = sub.add_parser("show", help="print one record with its owners and neighbours")
    sh.add_argument("path")
    sh.add_argument("id", type=int)
    sh.add_argument("--json", action="store_true", help="print JSON")
    sh.set_defaults(fn=_show)
    rc = sub.add_parser("recall", help="what OWNER recalls for QUERY (owner-scoped search plus one edge)")
    rc.add_argument("path")
    rc.add_argument("owner")
    rc.add_argument("query", help="text (embedded with --embedder), or a JSON vector with --vector-json")
    rc.add_argument("--k", type=int, default=5, help="nearest records to return (default 5)")
    rc.add_argument("--no-expand", action="store_true", help="no records one affiliation edge away")
    rc.add_argument("--vector-json", action="store_true", help="QUERY is a JSON array of floats")
    rc.add_argument(
        "--embedder",
        choices=["hash", "minilm"],
        default="hash",
        help="embeds a text QUERY; it must be the one the store was written with (default hash)",
    )
    rc.add_argument("--json", action="store_true", help="print JSON")
    rc.set_defaults(fn=_recall)
    ex = sub.add_parser("export", help="write the store as JSON Lines (records, vectors, edges, merge log, lineage)")
    ex.add_argument("path")
    ex.add_argument("-o", "--out", default="-", help="output file (default: standard output)")
    ex.set_defaults(fn=_export)
    im = sub.add_parser("import", help="build a new store at PATH from an export (records, edges, merge log, lineage)")
    im.add_argument("file", help="a file written by `agentsensus export` ('-': standard input)")
    im.add_argument("path", help="where the new store goes: must not exist, or be an empty directory")
    im.set_defaults(fn=_import)
    args = p.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
