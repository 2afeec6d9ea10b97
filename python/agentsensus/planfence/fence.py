"""Planfence: derivation currency for plans (docs/reference/contract.md, "Planfence").

A plan stores exact links to the versions of the inputs it was derived from.
Before a protected action, `Fence.check` walks those links to the
action's dependency frontier, asks each input's owner once for its current
heads, and reports what moved; `Fence.guard` lets the application
replan once before it blocks with `StalePlanError`.

The lineage lives in the store's LMDB environment (C++ engine); owners may
live in other processes, reached through a ``heads`` source such as
`agentsensus.planfence.transport.HeadsClient`.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence, Union

from .. import _core
from .._store.validation import check_owner, check_text
from ..errors import Error
from . import memory_links as mem

__all__ = ["Fence", "Link", "Stale", "Check", "StalePlanError", "UnknownKeyError", "value_digest"]

Value = Union[bytes, str]
#: ``heads(owner, keys)``: each key's current head version, or ``(version,
#: digest)`` to allow the early cutoff. A key left out is unknown (blocks).
HeadsFn = Callable[[str, list[str]], Mapping[str, Any]]

MAX_KEY_BYTES: int = _core.MAX_KEY_BYTES
MAX_VALUE_BYTES: int = _core.MAX_VALUE_BYTES
MAX_INPUTS: int = _core.MAX_INPUTS

# One owner's head query: (owner, encoded query, links as (key, version, digest)).
_Group = tuple[str, bytes, list[tuple[str, int, bytes]]]


class StalePlanError(Error):
    """A protected action was blocked: the plan is stale even after one
    replan (or the replan failed). ``.check`` says why."""

    def __init__(self, message: str, check: "Check") -> None:
        super().__init__(message)
        self.check = check


class UnknownKeyError(KeyError, ValueError):
    """A key or version that the lineage does not have. Both a ``KeyError``
    (a lookup that failed) and a ``ValueError`` (bad input to a write)."""

    def __str__(self) -> str:  # KeyError quotes its message; this reads better
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Link:
    """One recorded link: the exact ``version`` of ``key`` (owned by
    ``owner``) that a derived item used. ``digest`` is that version's content
    digest."""

    key: str
    owner: str
    version: int
    digest: bytes = field(default=b"", repr=False)


@dataclass(frozen=True)
class Stale:
    """A link that is not current: its key moved to ``head`` (``None`` when
    the owner gave no head), with the reason in plain words."""

    key: str
    owner: str
    recorded: int
    head: Optional[int]
    reason: str = ""


@dataclass(frozen=True)
class Check:
    """The outcome of a check. ``bytes`` is the size of the encoded head
    queries and answers (payloads only, without transport framing)."""

    current: bool
    stale: list[Stale]
    owners_asked: int
    bytes: int


def value_digest(value: bytes) -> bytes:
    """The 16-byte content digest a version keeps (BLAKE2b-128)."""
    return hashlib.blake2b(value, digest_size=16).digest()


def check_key(key: Any, name: str = "key") -> str:
    """A lineage key: a non-empty str of at most MAX_KEY_BYTES UTF-8 bytes."""
    return check_text(key, name, MAX_KEY_BYTES, f"{name} must be a non-empty string, got {key!r}")


def _check_value(value: Any) -> bytes:
    if isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"value is not valid Unicode text: {e}") from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    else:
        raise TypeError(f"value must be bytes or str, got {type(value).__name__}")
    if len(data) > MAX_VALUE_BYTES:
        raise ValueError(f"value is {len(data)} bytes; the limit is {MAX_VALUE_BYTES}")
    return data


def _check_version(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if v < 1:
        raise ValueError(f"{name} must be at least 1 (versions start at 1), got {v}")
    return int(v)


def _check_inputs(inputs: Any, memories: int = 0) -> list[tuple[str, int]]:
    if not isinstance(inputs, Mapping):
        raise TypeError(f"inputs must be a mapping of key -> version, got {type(inputs).__name__}")
    if not inputs and not memories:
        raise ValueError("inputs is empty: a derived item needs at least one input")
    if len(inputs) + memories > MAX_INPUTS:
        with_memories = f" and {memories} memories" if memories else ""
        raise ValueError(f"inputs has {len(inputs)} entries{with_memories}; the limit is {MAX_INPUTS}")
    return [(check_key(k, f"inputs key {k!r}"), _check_version(v, f"inputs[{k!r}]")) for k, v in inputs.items()]


def _check_memories(memories: Any) -> list[int]:
    """Record ids, distinct, in the order given (checked live later)."""
    if memories is None:
        return []
    if isinstance(memories, (str, bytes, int)):
        raise TypeError(f"memories must be an iterable of record ids, got {type(memories).__name__}")
    try:
        ids = list(memories)
    except TypeError:
        raise TypeError(f"memories must be an iterable of record ids, got {type(memories).__name__}") from None
    for i, rid in enumerate(ids):
        if isinstance(rid, bool) or not isinstance(rid, int):
            raise TypeError(f"memories[{i}] must be a record id (int), got {type(rid).__name__}")
    return list(dict.fromkeys(int(r) for r in ids))


def _own_key(key: Any) -> str:
    """A key publish or derive may write: not a memory link's."""
    checked = check_key(key)
    if checked.startswith(mem.PREFIX):
        raise ValueError(f"key {checked!r} has the form of a memory link (memory:...): link records with memories=")
    return checked


def _own_owner(owner: Any) -> str:
    checked = check_owner(owner)
    if checked == mem.MEMORY_OWNER:
        raise ValueError(f"owner {checked!r} is reserved for this store's memory links")
    return checked


def _check_observed_memory(key: str, owner: str, version: int) -> None:
    """An observed memory link names a record of the store answering for
    ``owner`` (``memory:<id>@<owner>``) at the version it is live at, its id."""
    if not key.startswith(mem.PREFIX):
        return
    parsed = mem.parse_memory_key(key)
    if parsed is None or parsed[1] != owner:
        raise ValueError(f"key {key!r} is not a memory link of owner {owner!r}: write memory:<id>@{owner}")
    if version != parsed[0]:
        raise ValueError(
            f"{key!r} is observed at version {parsed[0]}, its record's id, while it is live; "
            f"version {version} says record {version} superseded it: observe memory:{version}@{owner}"
        )


def _check_scope(scope: Any) -> Optional[list[str]]:
    if scope is None:
        return None
    if isinstance(scope, (str, bytes)):
        raise TypeError("scope must be an iterable of keys, not a single str")
    try:
        keys = list(scope)
    except TypeError:
        raise TypeError(f"scope must be an iterable of keys, got {type(scope).__name__}") from None
    return [check_key(k, "a scope key") for k in keys]


def _core_call(fn: Callable[..., Any], *args: Any) -> Any:
    """Engine lookups raise KeyError; here they become UnknownKeyError."""
    try:
        return fn(*args)
    except KeyError as e:
        raise UnknownKeyError(str(e.args[0]) if e.args else str(e)) from None


# The engine's StaleWhy members, bound once: a check reads a reason per stale
# row, and an enum attribute lookup costs about 100 ns.
_MOVED, _UNKNOWN, _MALFORMED = _core.StaleWhy.moved, _core.StaleWhy.unknown, _core.StaleWhy.malformed
_MARKER_QUERY = bytes(_core.Lineage.encode_query([(mem.MARKER_KEY, 1)]))
_UNKNOWN_ANSWER = bytes(_core.Lineage.encode_answer([(0, False)]))


def _stale_reason(
    key: str, owner: str, recorded: int, head: int, why: _core.StaleWhy, owner_error: Optional[str]
) -> str:
    if why is _MOVED:
        return f"{key!r} moved from version {recorded} to {head} at owner {owner!r}"
    if why is _UNKNOWN:
        return f"owner {owner!r} does not know {key!r}"
    if why is _MALFORMED:
        return f"owner {owner!r} sent a malformed answer" + (f": {owner_error}" if owner_error else "")
    if owner_error and f"owner {owner!r}" in owner_error:
        return owner_error  # the transport's message already names the owner
    return f"owner {owner!r} did not answer: {owner_error or 'no answer'}"


class LineageHost(Protocol):
    """What a Fence needs of its store: its open handles (with the lineage
    tables), whether it is read-only, and its path for messages. ``Store``
    is one; a protocol keeps this module from importing the store."""

    readonly: bool
    path: str

    def _handles(self) -> Any: ...


class Fence:
    """Planfence over one store's lineage: ``Fence(store)``, or the one
    ``store.fence`` keeps.

    Keys have one owner, fixed by their first write, and versions that start
    at 1. ``publish`` makes a new version of a base input; ``derive`` one of
    a derived item (a plan) with links to the exact input versions it used;
    ``check``/``guard`` decide whether a plan is still current.

    Beside publish, derive, check and guard: ``observe`` (record a version another store owns,
    so plans here can link to it), ``owner``, ``value``, ``keys``,
    ``check_all`` (all-key validation), ``answer`` and ``memory_value`` (the
    owner's side of a head or value query, for transports).

    ``derive(..., memories=[ids])`` also links records of the store: the
    plan is stale once one of them is superseded or deleted (see
    `memory_links`).
    """

    def __init__(self, store: LineageHost) -> None:
        self._store = store
        # .staged: ops a running replan wrote, kept until it returns;
        # .heads: the heads they make, so the replan reads its own writes.
        self._local = threading.local()

    def _l(self) -> Any:
        return self._store._handles().lineage  # raises when the store is closed

    # -- writes ------------------------------------------------------------------

    def _write(self, op: _core._LineageOp) -> int:
        return self._write_ops([op])[-1]

    def _write_ops(self, ops: list[_core._LineageOp]) -> list[int]:
        """Applies ``ops`` in one transaction (or stages them inside a
        replan); returns each op's version."""
        lin = self._l()
        if self._store.readonly:
            raise Error(f"the store at {self._store.path} is open read-only")
        staged: Optional[list[_core._LineageOp]] = getattr(self._local, "staged", None)
        if staged is None:
            return [int(v) for v in _core_call(lin.apply, ops, True)]
        # Inside a replan: validate and number against what it staged so far;
        # commit only if the replan returns.
        versions = [int(v) for v in _core_call(lin.apply, staged + ops, False)[len(staged) :]]
        staged.extend(ops)
        heads: dict[str, int] = self._local.heads
        for op, v in zip(ops, versions):
            key = op[1]
            if op[0] is not _core.LineageKind.observe:
                heads[key] = v
                continue
            try:  # an observed version is the head only if it is newer
                committed = int(lin.info(key)[1])
            except KeyError:
                committed = 0
            heads[key] = max(v, heads.get(key, 0), committed)
        return versions

    def publish(self, key: str, owner: str, value: Value) -> int:
        """Makes a new head version of base input ``key`` (versions start at
        1; identical content still makes a new version). Returns it."""
        key = _own_key(key)
        owner = _own_owner(owner)
        data = _check_value(value)
        return self._write((_core.LineageKind.publish, key, owner, value_digest(data), data, 0, []))

    def derive(
        self,
        key: str,
        owner: str,
        value: Value,
        inputs: Mapping[str, int],
        *,
        memories: Optional[Iterable[int]] = None,
    ) -> int:
        """Makes a new version of derived item ``key`` recording the exact
        ``inputs`` versions it was made from. Every input version must exist
        here (``UnknownKeyError`` otherwise). Returns the new version.

        ``memories``: ids of records of this store the item was also made
        from. Each must be a live record (stored, and the last of its chain
        of versions: nothing superseded it), else ``ValueError`` and nothing
        is written. Each is linked as input ``memory:<id>`` (owner
        ``"(memories)"``) at version ``id``, in the same transaction as the
        new version; ``check`` finds the item stale once a memory is
        superseded or deleted. ``inputs`` may be empty when ``memories`` is
        not."""
        key = _own_key(key)
        owner = _own_owner(owner)
        data = _check_value(value)
        ids = _check_memories(memories)
        links = _check_inputs(inputs, len(ids))
        ops = self._memory_ops(ids)
        links += [(mem.memory_key(rid), rid) for rid in ids]
        ops.append((_core.LineageKind.derive, key, owner, value_digest(data), data, 0, links))
        return self._write_ops(ops)[-1]

    def _memory_ops(self, ids: list[int]) -> list[_core._LineageOp]:
        """The observe ops that put memory links into the lineage (once per
        record, and the lineage's marker once): every id checked live first,
        so a refusal writes nothing. A record superseded between this read and
        the commit is linked at its own id all the same: the next check finds
        it stale."""
        if not ids:
            return []
        engine = self._store._handles().engine
        texts = [mem.live_text(engine, rid, f"memories[{i}]") for i, rid in enumerate(ids)]
        ops: list[_core._LineageOp] = []
        for key, version, text in [(mem.MARKER_KEY, 1, mem.MARKER_VALUE)] + [
            (mem.memory_key(rid), rid, t.encode("utf-8")) for rid, t in zip(ids, texts)
        ]:
            if not self._knows(key):
                ops.append((_core.LineageKind.observe, key, mem.MEMORY_OWNER, value_digest(text), text, version, []))
        return ops

    def _knows(self, key: str) -> bool:
        if getattr(self._local, "staged", None) is not None and key in self._local.heads:
            return True
        return self._knows_committed(key)

    def _knows_committed(self, key: str) -> bool:
        try:
            self._l().info(key)
        except KeyError:
            return False
        return True

    def observe(self, key: str, owner: str, version: int, value: Value) -> int:
        """Records ``version`` of ``key`` as its owner (another store) has it,
        so that items derived here can link to it. Observing a version again
        with the same content does nothing; with other content it raises
        ``ValueError``. A record of another store is observed as key
        ``memory:<id>@<owner>`` (``owner``: whose heads server holds it) at
        version ``id``, the version it has while live (what
        ``HeadsClient.fetch`` returns for it then)."""
        key = check_key(key)
        owner = _own_owner(owner)
        version = _check_version(version, "version")
        _check_observed_memory(key, owner, version)
        data = _check_value(value)
        return self._write((_core.LineageKind.observe, key, owner, value_digest(data), data, version, []))

    # -- reads -------------------------------------------------------------------

    def head(self, key: str) -> int:
        """The head version of ``key``; ``KeyError`` when unknown. Inside a
        guard's replan it includes what the replan wrote so far."""
        key = check_key(key)
        if getattr(self._local, "staged", None) is not None and key in self._local.heads:
            return int(self._local.heads[key])
        return int(_core_call(self._l().info, key)[1])

    def owner(self, key: str) -> str:
        """The owner of ``key``; ``KeyError`` when unknown."""
        return str(_core_call(self._l().info, check_key(key))[0])

    def value(self, key: str, version: Optional[int] = None) -> bytes:
        """The value of ``version`` of ``key`` (default: the head)."""
        v = 0 if version is None else _check_version(version, "version")
        return bytes(_core_call(self._l().value, check_key(key), v))

    def keys(self) -> list[str]:
        """Every key of this lineage, sorted."""
        return list(self._l().keys())

    def verify(self) -> list[str]:
        """Every broken lineage invariant, in plain words; ``[]`` when sound:
        each head names a stored version with a value and no version is past
        it, owners resolve both ways, and every link names a stored version
        of its key, under the key's owner, with that version's digest."""
        return list(self._l().verify())

    def frontier(self, key: str, *, scope: Optional[Iterable[str]] = None) -> list[Link]:
        """Every link reachable from the head of ``key`` through derived
        inputs down to base inputs, cut to ``scope`` (keys in scope, and
        everything beneath a derived key in scope), grouped by owner."""
        rows = _core_call(self._l().frontier, check_key(key), _check_scope(scope))
        return [Link(k, o, v, d) for k, o, v, d, _ in rows]

    # -- checks ------------------------------------------------------------------

    def check(self, key: str, *, scope: Optional[Iterable[str]] = None, heads: Any = None) -> Check:
        """Is the plan ``key`` current? Asks each owner on its frontier once
        for all its keys (``heads``: ``None`` answers from this store; a
        callable ``heads(owner, keys)``; or a transport client with
        ``ask_encoded``). A key missing from an answer, or an owner that fails
        to answer, makes the check not current. A head that moved to content
        with the recorded digest is still current (early cutoff). This
        store's memory links (``derive(..., memories=)``) are answered from
        its records, never sent to ``heads``: a memory is stale once
        superseded or deleted."""
        key = check_key(key)
        sc = _check_scope(scope)
        lin = self._l()
        if heads is None:
            # Without memory links the engine checks on one snapshot; with them
            # they are answered from the records, the rest by the engine.
            if self._has_memory_links(lin):
                prepared = _core_call(lin.prepare, key, sc)
                groups = prepared.groups()
                if any(owner == mem.MEMORY_OWNER for owner, _, _ in groups):
                    answers: list[Optional[bytes]] = [
                        self._memory_answer([k for k, _, _ in links])
                        if owner == mem.MEMORY_OWNER
                        else bytes(lin.answer(owner, query))
                        for owner, query, links in groups
                    ]
                    return self._result(lin.finish(prepared, answers), {}, self._explainer(None))
            return self._result(_core_call(lin.check_local, key, sc), {})
        return self._ask(lin, _core_call(lin.prepare, key, sc), heads)

    def check_all(self, *, heads: Any = None) -> Check:
        """All-key validation: every key of this lineage at its head, asked of
        its owner. What a check without lineage would have to send."""
        lin = self._l()
        return self._ask(lin, lin.prepare_all(), heads if heads is not None else _LocalHeads(self))

    def answer(self, owner: str, query: bytes) -> bytes:
        """The owner's side of a head query: answers an encoded query from
        this store's heads (what a heads server sends back). A memory link
        ``memory:<id>@<owner>`` this lineage does not hold is answered from
        this store's records: the version record ``id`` stands at (see
        `memory_links`)."""
        if not isinstance(query, (bytes, bytearray, memoryview)):
            raise TypeError(f"query must be bytes, got {type(query).__name__}")
        owner, q = check_owner(owner), bytes(query)
        if owner == mem.MEMORY_OWNER:
            return self._memory_answer(mem.decode_query_keys(q))
        out = bytes(self._l().answer(owner, q))
        if b":" not in q:  # no key in it has the memory form
            return out
        keys = mem.decode_query_keys(q)
        pairs = mem.decode_answer(out, len(keys))
        if all(head for head, _ in pairs):
            return out
        engine = None
        for i, k in enumerate(keys):
            parsed = mem.parse_memory_key(k) if not pairs[i][0] else None
            if parsed is not None and parsed[1] == owner:
                engine = engine or self._store._handles().engine
                pairs[i] = (mem.memory_head(engine, parsed[0]), False)
        return bytes(_core.Lineage.encode_answer(pairs))

    def memory_value(self, owner: str, key: str) -> Optional[tuple[int, bytes]]:
        """What a heads server sends for a value request of memory link
        ``key`` (``memory:<id>@<owner>``) this lineage does not hold: the
        version record ``id`` stands at and that record's text; ``None``
        for any other key, or a record that is gone."""
        owner, key = check_owner(owner), check_key(key)
        parsed = mem.parse_memory_key(key)
        if parsed is None or parsed[1] != owner or self._knows_committed(key):
            return None
        engine = self._store._handles().engine
        head = mem.memory_head(engine, parsed[0])
        text = mem.record_text(engine, head) if head else None
        return None if text is None else (head, text.encode("utf-8"))

    @staticmethod
    def _has_memory_links(lin: Any) -> bool:
        """Whether the lineage holds the marker of memory links: asked as a
        head query, which answers an unknown key without raising (a raised
        KeyError would cost more than a whole small check)."""
        return bool(lin.answer(mem.MEMORY_OWNER, _MARKER_QUERY) != _UNKNOWN_ANSWER)

    def _memory_answer(self, keys: Sequence[str]) -> bytes:
        """This store's answer for its own memory links (owner `MEMORY_OWNER`)."""
        engine = self._store._handles().engine
        pairs: list[tuple[int, bool]] = []
        for k in keys:
            parsed = mem.parse_memory_key(k)
            if parsed is not None and parsed[1] is None:
                pairs.append((mem.memory_head(engine, parsed[0]), False))
            else:  # the marker stands at its one version; anything else is unknown
                pairs.append((1 if k == mem.MARKER_KEY else 0, False))
        return bytes(_core.Lineage.encode_answer(pairs))

    def guard(
        self,
        key: str,
        *,
        scope: Optional[Iterable[str]] = None,
        replan: Callable[[Check], Any],
        heads: Any = None,
    ) -> Check:
        """Checks ``key``; if stale, calls ``replan(check)`` once (it refreshes
        what it needs and derives ``key`` again), then checks again. Returns
        the current ``Check``; raises ``StalePlanError`` if still stale. What
        the replan writes is kept only if it returns: a replan that raises
        leaves the lineage unchanged, and the action is blocked."""
        if not callable(replan):
            raise TypeError(f"replan must be a callable replan(check), got {type(replan).__name__}")
        key = check_key(key)
        sc = _check_scope(scope)
        first = self.check(key, scope=sc, heads=heads)
        if first.current:
            return first
        if getattr(self._local, "staged", None) is not None:
            raise Error("guard cannot run inside another guard's replan")
        self._local.staged, self._local.heads = [], {}
        try:
            replan(first)
            staged = self._local.staged
        except Exception as e:
            raise StalePlanError(
                f"plan {key!r} is stale and its replan raised {type(e).__name__}: {e}; "
                "nothing the replan wrote was kept",
                first,
            ) from e
        finally:
            self._local.staged, self._local.heads = None, {}
        if staged:
            _core_call(self._l().apply, staged, True)
        second = self.check(key, scope=sc, heads=heads)
        if not second.current:
            reasons = "; ".join(s.reason for s in second.stale[:3])
            more = f" (and {len(second.stale) - 3} more)" if len(second.stale) > 3 else ""
            raise StalePlanError(f"plan {key!r} is still stale after one replan: {reasons}{more}", second)
        return second

    # -- internals ---------------------------------------------------------------

    def _ask(self, lin: Any, prepared: Any, heads: Any) -> Check:
        groups = prepared.groups()
        errors: dict[str, str] = {}
        # This store's memory links are answered here, never sent to a heads source.
        mine = [g[0] == mem.MEMORY_OWNER for g in groups]
        asked = [g for g, m in zip(groups, mine) if not m]
        if hasattr(heads, "ask_encoded"):
            try:
                replies = heads.ask_encoded({owner: query for owner, query, _ in asked}) if asked else {}
            except Exception as e:  # the client itself failed: every owner is unanswered
                replies = {owner: e for owner, _, _ in asked}
            answers: list[Optional[bytes]] = []
            for owner, _, _ in asked:
                r = replies.get(owner) if isinstance(replies, Mapping) else None
                if isinstance(r, (bytes, bytearray)):
                    answers.append(bytes(r))
                else:
                    answers.append(None)
                    errors[owner] = str(r) if isinstance(r, BaseException) else "no answer"
        elif callable(heads):
            answers = self._ask_callables(heads, asked, errors)
        else:
            raise TypeError("heads must be None, a callable heads(owner, keys), or a client with ask_encoded")
        if any(mine):
            rest = iter(answers)
            answers = [self._memory_answer([k for k, _, _ in g[2]]) if m else next(rest) for g, m in zip(groups, mine)]
        return self._result(lin.finish(prepared, answers), errors, self._explainer(heads))

    def _ask_callables(self, heads: HeadsFn, groups: Sequence[_Group], errors: dict[str, str]) -> list[Optional[bytes]]:
        def one(group: _Group) -> Optional[bytes]:
            owner, _, links = group
            keys = sorted({k for k, _, _ in links})
            try:
                reply = heads(owner, keys)
            except Exception as e:
                errors[owner] = f"{type(e).__name__}: {e}"
                return None
            if not isinstance(reply, Mapping):
                errors[owner] = f"heads({owner!r}, ...) returned {type(reply).__name__}, not a mapping"
                return None
            pairs: list[tuple[int, bool]] = []
            for k, _version, digest in links:
                h = reply.get(k)
                same = False
                if isinstance(h, tuple) and len(h) == 2:
                    h, d = h
                    same = isinstance(d, (bytes, bytearray)) and bytes(d) == digest
                if h is None:
                    h = 0
                if isinstance(h, bool) or not isinstance(h, int) or h < 0:
                    errors[owner] = f"heads({owner!r}, ...) answered {h!r} for {k!r}, not a version"
                    return None
                pairs.append((int(h), same))
            return bytes(_core.Lineage.encode_answer(pairs))

        if len(groups) <= 1:
            return [one(g) for g in groups]
        with ThreadPoolExecutor(max_workers=min(len(groups), 32)) as pool:
            return list(pool.map(one, groups))

    @staticmethod
    def _result(
        raw: _core._CheckResult,
        errors: Mapping[str, str],
        explain: Optional[Callable[[str, str, int, int], Optional[str]]] = None,
    ) -> Check:
        current, rows, asked, size = raw
        stale = []
        for k, o, rec, head, why in rows:
            reason = None
            if explain is not None and (why is _MOVED or why is _UNKNOWN) and k.startswith(mem.PREFIX):
                reason = explain(k, o, rec, head)
            if reason is None:
                reason = _stale_reason(k, o, rec, head, why, errors.get(o))
            stale.append(Stale(k, o, rec, head or None, reason))
        return Check(bool(current), stale, int(asked), int(size))

    def _explainer(self, heads: Any) -> Callable[[str, str, int, int], Optional[str]]:
        """Reasons for stale memory links, naming the memory and the record
        that superseded it: texts from this store's records, else from the
        text the link recorded and (remote) the owner's value of the link."""

        def explain(key: str, owner: str, recorded: int, head: int) -> Optional[str]:
            parsed = mem.parse_memory_key(key)
            if parsed is None or recorded != parsed[0]:
                return None
            rid, remote = parsed
            if remote is None and owner == mem.MEMORY_OWNER:
                engine = self._store._handles().engine
                old = mem.record_text(engine, rid)
                new = mem.record_text(engine, head) if head else None
                where = ""
            elif remote == owner:
                old, new, where = None, None, f" at owner {owner!r}"
                if head and hasattr(heads, "fetch"):
                    try:
                        version, value = heads.fetch(owner, key)
                        new = bytes(value).decode("utf-8", "replace") if version == head else None
                    except Exception:
                        pass  # the reason goes without the newer text
            else:
                return None
            if old is None:
                try:
                    old = bytes(self._l().value(key, recorded)).decode("utf-8", "replace")
                except KeyError:
                    pass
            return mem.memory_reason(rid, where, old, head or None, new)

        return explain


class _LocalHeads:
    """Answers head queries from one store, through the encoding (so that
    bytes are counted as a remote check would count them)."""

    def __init__(self, fence: Fence) -> None:
        self._fence = fence

    def ask_encoded(self, queries: Mapping[str, bytes]) -> dict[str, bytes]:
        return {owner: self._fence.answer(owner, q) for owner, q in queries.items()}
