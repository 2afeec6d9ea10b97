"""mem0's filter language, read into a test of one memory's fields and the
part of it the engine can evaluate in its candidate scan.

The language is mem0 2.x's (``Memory.search`` and ``get_all``): a dict whose
keys are fields (the memory's metadata keys, ``user_id``, ``agent_id``,
``run_id``, ``actor_id``, ``role``, ``created_at``, ``updated_at``) and whose
values are a value (equality), a list (one of them), ``"*"`` (the field is
present, any value) or a dict of operators ``eq ne in nin gt gte lt lte
contains icontains`` (all must hold); and the logical keys ``AND`` and ``OR``
(a list of such dicts: all of them, at least one) and ``NOT`` (a list: none
of them). ``$and``, ``$or`` and ``$not`` are read as ``AND``, ``OR`` and
``NOT``, as mem0's Qdrant store does, and ``$gte`` (the store's spelling,
mem0 1.x's examples) as ``gte``, and so on. A field that is absent fails
every test, ``ne`` and ``nin`` included (as in mem0's Qdrant and pgvector
stores); ``"*"`` is mem0's "any value" (its pgvector and OpenSearch stores
test that the field exists; its local Qdrant cannot, and drops the clause). ``gt``/``gte``/``lt``/``lte`` compare numbers,
or ISO dates and times (``created_at`` among them) as times.

The engine's ``where`` (agentsensus._store.record_meta) is a conjunction of
equality, ``$in`` and ranges on one owner's metadata: the top-level clauses
that fit it are handed to it, the rest is tested here on what it returns.
"""

from __future__ import annotations

import datetime
import math
from typing import Any, Callable, Mapping, NamedTuple

__all__ = ["OPERATORS", "LOGICAL", "Compiled", "compile_filters"]

OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
LOGICAL = ("AND", "OR", "NOT")
_ALIASES = {"$and": "AND", "$or": "OR", "$not": "NOT"}
_RANGES = {"gt", "gte", "lt", "lte"}
_PUSHED_OPS = {"eq": "$eq", "in": "$in", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
# Record fields in the engine's where; here they are the owner's own times.
_NOT_PUSHED = {"created_at", "updated_at", "round"}

Test = Callable[[Mapping[str, Any]], bool]
_ABSENT = object()


class Compiled(NamedTuple):
    """A filter read: ``test(fields)`` says whether a memory passes,
    ``where`` is the part the engine can evaluate, ``exact`` whether
    ``where`` is the whole filter (nothing left for ``test`` to drop)."""

    test: Test
    where: dict[str, Any]
    exact: bool


def _unknown(key: str, op: object) -> ValueError:
    return ValueError(
        f"filters: {key!r} uses the unknown operator {op!r}; the operators are "
        f"{', '.join(OPERATORS)}, the logical keys {', '.join(LOGICAL)}, and the value '*'"
    )


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _time(v: Any) -> Any:
    if not isinstance(v, str) or len(v) < 10 or v[4:5] != "-":
        return None
    try:
        t = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=datetime.timezone.utc)


def _ordered(have: Any, want: Any) -> Any:
    """The pair to compare, or ``None`` when the two do not compare."""
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if isinstance(have, (int, float)) and not isinstance(have, bool):
            return have, want
        return None
    tw, th = _time(want), _time(have)
    return None if tw is None or th is None else (th, tw)


def _field_test(key: str, op: str, want: Any) -> Test:
    if op in ("in", "nin"):
        if not isinstance(want, (list, tuple)):
            raise TypeError(f"filters: {key!r} {op} takes a list, got {type(want).__name__}")
        values = list(want)
    if op in _RANGES and _ordered(want, want) is None:
        raise TypeError(f"filters: {key!r} {op} compares with a number or an ISO date, got {want!r}")
    if op in ("contains", "icontains") and not isinstance(want, str):
        raise TypeError(f"filters: {key!r} {op} takes a str, got {type(want).__name__}")

    def test(fields: Mapping[str, Any]) -> bool:
        have = fields.get(key, _ABSENT)
        if have is _ABSENT:
            return False  # as mem0's Qdrant and pgvector stores: even ne and nin
        if op == "ne":
            return not _same(have, want)
        if op == "nin":
            return not any(_same(have, v) for v in values)
        if op == "eq":
            return _same(have, want)
        if op == "in":
            return any(_same(have, v) for v in values)
        if op in _RANGES:
            pair = _ordered(have, want)
            if pair is None:
                return False
            a, b = pair
            return bool(a > b if op == "gt" else a >= b if op == "gte" else a < b if op == "lt" else a <= b)
        if not isinstance(have, str):
            return False
        return want in have if op == "contains" else want.casefold() in have.casefold()

    return test


def _ops(cond: Mapping[str, Any]) -> dict[str, Any]:
    """The operators with the store's ``$`` spelling (``$gte``) read as mem0's."""
    return {
        op[1:] if isinstance(op, str) and op[1:] in OPERATORS and op[:1] == "$" else op: v for op, v in cond.items()
    }


def _condition(key: str, cond: Any) -> Test:
    if isinstance(cond, Mapping):
        cond = _ops(cond)
        if not cond:
            raise ValueError(f"filters: {key!r} has an empty condition")
        for op in cond:
            if op not in OPERATORS:
                raise _unknown(key, op)
        tests = [_field_test(key, op, want) for op, want in cond.items()]
        return lambda fields: all(t(fields) for t in tests)
    if isinstance(cond, str) and cond == "*":
        return lambda fields: key in fields
    if isinstance(cond, (list, tuple)):
        return _field_test(key, "in", cond)
    return _field_test(key, "eq", cond)


def _logical(name: str, value: Any) -> Test:
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, Mapping) for v in value):
        raise ValueError(f"filters: {name} takes a non-empty list of filter dicts")
    parts = [_tree(v) for v in value]
    if name == "AND":
        return lambda fields: all(p(fields) for p in parts)
    if name == "OR":
        return lambda fields: any(p(fields) for p in parts)
    return lambda fields: not any(p(fields) for p in parts)


def _tree(filters: Mapping[str, Any]) -> Test:
    tests = []
    for key, cond in filters.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"filters: keys must be non-empty str, got {key!r}")
        name = _ALIASES.get(key, key)
        tests.append(_logical(name, cond) if name in LOGICAL else _condition(key, cond))
    return lambda fields: all(t(fields) for t in tests)


def _pushed(key: str, cond: Any) -> Any:
    """The engine's form of a top-level clause, or ``None`` when it has none."""
    if key in _NOT_PUSHED or key.startswith(("$", "metadata.")) or key in LOGICAL:
        return None
    if isinstance(cond, Mapping):
        out = {}
        for op, want in _ops(cond).items():
            if op not in _PUSHED_OPS:
                return None
            if op == "in":
                if not isinstance(want, (list, tuple)) or not want or not all(_scalar(v) for v in want):
                    return None
            elif op in _RANGES:
                if isinstance(want, bool) or not isinstance(want, (int, float)):
                    return None
            elif not _scalar(want):
                return None
            out[_PUSHED_OPS[op]] = list(want) if op == "in" else want
        return out
    if cond == "*" or not _scalar(cond) or cond is None:
        return None
    return cond


def compile_filters(filters: Mapping[str, Any]) -> Compiled:
    """``filters`` read; a one-line ``ValueError``/``TypeError`` when it is not
    mem0's filter language (an unknown operator names the ones there are)."""
    if not isinstance(filters, Mapping):
        raise TypeError(f"filters must be a dict, got {type(filters).__name__}")
    test = _tree(filters)
    where: dict[str, Any] = {}
    exact = True
    for key, cond in filters.items():
        pushed = _pushed(key, cond)
        if pushed is None:
            exact = False
        else:
            where[key] = pushed
    return Compiled(test, where, exact)
