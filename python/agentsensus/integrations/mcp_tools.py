"""The tools ``agentsensus mcp`` serves, and the view of the store each caller gets.

Unbound (stdio without ``--owner``, or HTTP on loopback without tokens),
the tools take an ``owner`` argument and ``get``/``stats`` see the whole
store: one trusted user drives many owners. Bound (``--owner``, or a bearer
token per HTTP connection), no tool takes an owner: every tool acts as the
bound owner, and ``get``, ``list_memories``, ``recall``, ``forget`` and
``stats`` see only that owner's records (of the bound scope, if any). A
record the owner does not hold is "not found", the same answer as a missing
id. Every parameter carries a description for the model, and a call with an
argument the tool does not take is refused.

A store opened with ``disclosure="own_words"`` (``agentsensus mcp
--disclosure own_words``) shows each owner only its own words: ``recall``,
and bound ``get`` and ``list_memories``, give the owner's own statement and
the owner alone as owners (docs/reference/store.md, "What an owner reads"), and bound
``stats`` counts only its records (how many are shared would tell it when
another owner's words join them).
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from typing import Annotated, Any, Callable, Optional

from pydantic import ConfigDict, Field

from ..errors import Error
from ..records import Memory
from ..store import Store
from .mcp_tokens import Binding

__all__ = ["Tools", "make_tools"]

Embed = Callable[[list[str]], Any]

Owner = Annotated[
    str,
    Field(description="The agent whose memory this is: a name; its records are those it deposited or merged into."),
]
Statements = Annotated[
    list[str],
    Field(description="The facts to store, each a short standalone statement; a fact already stored merges into it."),
]
Query = Annotated[
    str, Field(description="What to look for, in plain words; the records nearest in meaning come first.")
]
K = Annotated[int, Field(ge=1, description="How many nearest records to return (at least 1; default 5).")]
Expand = Annotated[
    bool,
    Field(description="Also return the owner's records one affiliation edge away from the hits (default true)."),
]
Threshold = Annotated[
    Optional[float],
    Field(
        description="Drop hits scored below this (the score recall reports, a similarity: 1 is identical); "
        "no threshold by default."
    ),
]
RecordId = Annotated[int, Field(description="A record id, as remember, recall or list_memories returned it.")]
Key = Annotated[str, Field(description="A Planfence key: the name of a base input or of a derived plan.")]
Value = Annotated[str, Field(description="The content of this version, as text.")]
Inputs = Annotated[
    dict[str, int],
    Field(description="The exact input versions the plan was made from: key -> version, as publish returned them."),
]
PlanScope = Annotated[
    Optional[list[str]],
    Field(description="Check only these input keys of the plan; every input when omitted."),
]


def _memory(m: Memory) -> dict[str, Any]:
    return {"id": m.id, "text": m.text, "owners": sorted(m.owners), "round": m.round, "score": m.score, "via": m.via}


def _not_found(id: Any) -> KeyError:
    # The store's own text for a missing id, so that a record the caller
    # may not see reads the same as one that does not exist.
    return KeyError(f"no record {id}")


class Tools:
    """The store operations behind the tools. ``binding`` ``None`` (only
    for ``get`` and ``stats``): the whole store; otherwise that owner's view."""

    def __init__(self, store: Store, embed: Embed) -> None:
        self.store = store
        self.embed = embed

    @property
    def _own(self) -> bool:
        return self.store.disclosure == "own_words"

    def _visible(self, b: Binding, id: int) -> Memory:
        """Record ``id`` if ``b`` may see it (as ``b``'s own words under
        ``own_words``), else the not-found error."""
        try:
            m = self.store.get(id, owner=b.owner) if self._own else self.store.get(id)
        except KeyError:
            raise _not_found(id) from None
        if b.owner not in m.owners or (b.scope is not None and self.store.scope_of(m.id) != b.scope):
            raise _not_found(id)
        return m

    def _ids(self, b: Binding) -> list[int]:
        ids = self.store.owned(b.owner)
        if b.scope is not None:
            ids = [i for i in ids if self.store.scope_of(i) == b.scope]
        return ids

    def remember(self, b: Binding, statements: list[str]) -> dict[str, Any]:
        """Deposits ``statements`` as the owner (into the bound scope)."""
        d = self.store.deposit(b.owner, statements, self.embed(list(statements)), scope=b.scope)
        return {"ids": d.ids, "merged": d.merged}

    def recall(self, b: Binding, query: str, k: int, expand: bool, threshold: Optional[float]) -> dict[str, Any]:
        """The owner's nearest records (of the bound scope), hits below ``threshold`` dropped."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty text")
        found = self.store.recall(b.owner, self.embed([query]), k=k, expand=expand, threshold=threshold, scope=b.scope)
        if b.scope is not None:  # the expansion may cross scopes; the bound view does not
            found = [m for m in found if self.store.scope_of(m.id) == b.scope]
        return {"memories": [_memory(m) for m in found]}

    def get(self, b: Optional[Binding], id: int) -> dict[str, Any]:
        """Record ``id``, if ``b`` may see it."""
        return _memory(self.store.get(id) if b is None else self._visible(b, id))

    def list_memories(self, b: Binding) -> dict[str, Any]:
        """Every record the owner holds (of the bound scope), oldest first."""
        own = b.owner if self._own else None
        return {"memories": [_memory(self.store.get(i, owner=own)) for i in self._ids(b)]}

    def forget(self, b: Binding, id: int) -> dict[str, Any]:
        """The owner lets go of record ``id``."""
        self._visible(b, id)
        self.store.forget(b.owner, id)
        return {"forgotten": id}

    def stats(self, b: Optional[Binding]) -> dict[str, Any]:
        """The store's counts, or with ``b`` the owner's: its records, how
        many of them are shared, and the most owners one of them has."""
        if b is None:
            return asdict(self.store.stats())
        if self._own:
            return {"owner": b.owner, "scope": b.scope, "records": len(self._ids(b))}
        owners = [len(self.store.get(i).owners) for i in self._ids(b)]
        return {
            "owner": b.owner,
            "scope": b.scope,
            "records": len(owners),
            "shared": sum(1 for n in owners if n > 1),
            "max_owners": max(owners, default=0),
        }

    def publish(self, b: Binding, key: str, value: str) -> dict[str, Any]:
        """Planfence: a new version of base input ``key``, owned by the owner."""
        return {"key": key, "version": self.store.fence.publish(key, b.owner, value)}

    def derive(self, b: Binding, key: str, value: str, inputs: dict[str, int]) -> dict[str, Any]:
        """Planfence: a new version of plan ``key`` made from ``inputs``."""
        return {"key": key, "version": self.store.fence.derive(key, b.owner, value, inputs)}

    def check_plan(self, key: str, scope: Optional[list[str]]) -> dict[str, Any]:
        """Planfence: is plan ``key`` current, and which inputs moved."""
        c = self.store.fence.check(key, scope=scope)
        stale = [
            {"key": s.key, "owner": s.owner, "recorded": s.recorded, "head": s.head, "reason": s.reason}
            for s in c.stale
        ]
        return {"current": c.current, "stale": stale, "owners_asked": c.owners_asked}


#: A tool: its name, function, description and whether it only reads.
ToolSpec = tuple[str, Callable[..., Any], str, bool]
PLANFENCE_TOOLS = ("publish", "derive", "check_plan")


def make_tools(t: Tools, who: Optional[Callable[[], Binding]], as_whom: str) -> list[ToolSpec]:
    """The tools over ``t``: with ``who`` (the binding of the call being
    served) bound, without it taking an ``owner`` argument. ``as_whom``
    names the owner in the descriptions."""
    if who is None:
        specs = _unbound(t)
    else:
        specs = _bound(t, who)
    docs = _descriptions(as_whom, bound=who is not None, own=t.store.disclosure == "own_words")
    return [(name, _told(fn), docs[name], name in _READS) for name, fn in specs]


_READS = frozenset({"recall", "get", "list_memories", "stats", "check_plan"})


def _unbound(t: Tools) -> list[tuple[str, Callable[..., Any]]]:
    def remember(owner: Owner, statements: Statements) -> dict[str, Any]:
        return t.remember(Binding(owner), statements)

    def recall(
        owner: Owner, query: Query, k: K = 5, expand: Expand = True, threshold: Threshold = None
    ) -> dict[str, Any]:
        return t.recall(Binding(owner), query, k, expand, threshold)

    def get(id: RecordId) -> dict[str, Any]:
        return t.get(None, id)

    def list_memories(owner: Owner) -> dict[str, Any]:
        return t.list_memories(Binding(owner))

    def forget(owner: Owner, id: RecordId) -> dict[str, Any]:
        return t.forget(Binding(owner), id)

    def stats() -> dict[str, Any]:
        return t.stats(None)

    def publish(key: Key, owner: Owner, value: Value) -> dict[str, Any]:
        return t.publish(Binding(owner), key, value)

    def derive(key: Key, owner: Owner, value: Value, inputs: Inputs) -> dict[str, Any]:
        return t.derive(Binding(owner), key, value, inputs)

    def check_plan(key: Key, scope: PlanScope = None) -> dict[str, Any]:
        return t.check_plan(key, scope)

    return _listed(remember, recall, get, list_memories, forget, stats, publish, derive, check_plan)


def _bound(t: Tools, who: Callable[[], Binding]) -> list[tuple[str, Callable[..., Any]]]:
    def remember(statements: Statements) -> dict[str, Any]:
        return t.remember(who(), statements)

    def recall(query: Query, k: K = 5, expand: Expand = True, threshold: Threshold = None) -> dict[str, Any]:
        return t.recall(who(), query, k, expand, threshold)

    def get(id: RecordId) -> dict[str, Any]:
        return t.get(who(), id)

    def list_memories() -> dict[str, Any]:
        return t.list_memories(who())

    def forget(id: RecordId) -> dict[str, Any]:
        return t.forget(who(), id)

    def stats() -> dict[str, Any]:
        return t.stats(who())

    def publish(key: Key, value: Value) -> dict[str, Any]:
        return t.publish(who(), key, value)

    def derive(key: Key, value: Value, inputs: Inputs) -> dict[str, Any]:
        return t.derive(who(), key, value, inputs)

    def check_plan(key: Key, scope: PlanScope = None) -> dict[str, Any]:
        return t.check_plan(key, scope)

    return _listed(remember, recall, get, list_memories, forget, stats, publish, derive, check_plan)


def _listed(*fns: Callable[..., Any]) -> list[tuple[str, Callable[..., Any]]]:
    return [(fn.__name__, fn) for fn in fns]


def _descriptions(who: str, *, bound: bool, own: bool = False) -> dict[str, str]:
    mine = f"{who} holds" if bound else "the owner holds"
    counts = "records" if own else "records, shared (held with other owners), max_owners"
    return {
        "remember": f"Stores statements (short facts) as {who}. A statement that states a fact already stored "
        "merges into that record, which gains the owner. Returns each statement's record id and whether it merged.",
        "recall": f"The k records {mine} nearest the query text, best first, each as {who} said it, with its "
        "score; hits scored below threshold are dropped (expand does nothing here)."
        if own
        else f"The k records {mine} nearest the query text, best first, with their owners and scores; hits "
        "scored below threshold are dropped; with expand, also the records one affiliation edge away.",
        "get": f"One record {mine}, by id: its text, owners and round."
        if bound
        else "One record by id: its text, owners and round.",
        "list_memories": f"Every record {mine}, oldest first.",
        "forget": f"Record id is forgotten by {who}; records other owners hold stay theirs.",
        "stats": f"Counts of the records {mine}: {counts}."
        if bound
        else "The store's counts: records, deposits, merges, shared records, owners.",
        "publish": f"Planfence: a new version of base input key (owned by {who}) with this value; returns the version.",
        "derive": f"Planfence: a new version of derived item key (a plan, owned by {who}) made from the exact input "
        "versions given (key -> version); returns the version.",
        "check_plan": "Planfence: is plan key current? Walks its links to the inputs it was derived from and "
        "reports each input that moved since (stale), optionally cut to scope.",
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


def strict(tool: Any) -> Any:
    """``tool`` (an SDK ``Tool``) refusing arguments it does not take: its
    argument model forbids extras, and its schema says so."""
    base = tool.fn_metadata.arg_model
    model: Any = type(
        base.__name__, (base,), {"model_config": ConfigDict(extra="forbid"), "__module__": base.__module__}
    )
    tool.fn_metadata.arg_model = model
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool
