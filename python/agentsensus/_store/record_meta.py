"""Per-(record, owner) metadata, record times, and recall's ``where``.

Metadata is a JSON object an owner attaches to its statements (``Store.deposit(...,
metadata=...)``); each owner's is its own, so a merge never mixes two
witnesses' metadata. Times are the engine's microseconds since the epoch,
shown as timezone-aware UTC datetimes.

``where`` is parsed here into the compact spec the engine evaluates inside
its candidate scan (docs/file-format.md, "Times and metadata"), so the k
best records that pass are exact: a conjunction of clauses, one per field, each ``value`` (equality)
or a dict of ``$eq``, ``$in``, ``$gte``, ``$lte``, ``$gt``, ``$lt``. The
fields ``round``, ``created_at`` and ``updated_at`` are the record's; any
other name (or ``metadata.NAME``) is a key of the querying owner's metadata.
``$and`` takes a list of such dicts.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import struct
from typing import Any, Mapping, Optional, Sequence, Union

from .. import _core
from ..errors import CorruptStoreError
from .validation import check_json_value

__all__ = [
    "MAX_METADATA_BYTES",
    "check_metadata",
    "metadata_per_statement",
    "decode_metadata",
    "to_datetime",
    "encode_where",
]

MAX_METADATA_BYTES: int = int(getattr(_core, "MAX_METADATA_BYTES", 16 * 1024))

_FIELDS = {"round": 1, "created_at": 2, "updated_at": 3}  # the rest: 0, a metadata key
_OPS = {"$eq": 0, "$in": 1, "$gte": 2, "$lte": 3, "$gt": 4, "$lt": 5}
_MAX_CLAUSES = 1024
_MAX_IN_VALUES = 4096


def check_metadata(metadata: Any, what: str = "metadata") -> str:
    """The metadata as the compact JSON text the engine stores; a one-line
    ``TypeError``/``ValueError`` for anything that is not a small JSON object."""
    if not isinstance(metadata, Mapping):
        raise TypeError(f"{what} must be a dict (a JSON object), got {type(metadata).__name__}")
    for key in metadata:
        if not isinstance(key, str):
            raise TypeError(f"{what} keys must be str, got {type(key).__name__}")
    check_json_value(metadata, what)  # depth, int64 and finite floats, before json.dumps recurses
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what} must be JSON-serializable without NaN or inf: {e}") from None
    size = len(text.encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"{what} is {size} bytes as JSON, more than the limit of {MAX_METADATA_BYTES}")
    return text


def metadata_per_statement(metadata: Any, n: int) -> Optional[list[Optional[str]]]:
    """``metadata`` for a deposit of ``n`` statements: ``None`` (none given),
    one dict for every statement, or a list of one dict (or ``None``) per statement."""
    if metadata is None:
        return None
    if isinstance(metadata, Mapping):
        one = check_metadata(metadata)
        return [one] * n
    if isinstance(metadata, (list, tuple)):
        if len(metadata) != n:
            raise ValueError(f"metadata is a list of {len(metadata)}, but the deposit has {n} statements")
        return [None if m is None else check_metadata(m, f"metadata[{i}]") for i, m in enumerate(metadata)]
    raise TypeError(f"metadata must be a dict or a list of dicts, got {type(metadata).__name__}")


def decode_metadata(text: Optional[str]) -> Optional[dict[str, Any]]:
    """The stored JSON text as a dict (``None`` when the owner gave none)."""
    if text is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


def to_datetime(micros: Optional[int]) -> Optional[_dt.datetime]:
    """Engine microseconds as an aware UTC datetime (``None`` for records
    written before the store kept times)."""
    if micros is None:
        return None
    try:
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=int(micros))
    except OverflowError:
        # The engine writes only clock times; one past year 9999 is a damaged times row.
        raise CorruptStoreError(f"a record time of {int(micros)} us is out of range (damaged times table)") from None


def _time_micros(value: Any, field: str) -> float:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"where: {field} needs a timezone-aware datetime (naive datetimes are ambiguous)")
        return float(round(value.timestamp() * 1_000_000))
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value) * 1_000_000  # seconds since the epoch
    raise TypeError(f"where: {field} compares with a datetime or seconds since the epoch, got {type(value).__name__}")


def _value(value: Any, field: str, code: int) -> bytes:
    if code in (2, 3):
        return b"\x02" + struct.pack("=d", _time_micros(value, field))
    if code == 1 and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"where: round compares with an int, got {type(value).__name__}")
    if value is None:
        return b"\x00"
    if isinstance(value, bool):
        return b"\x01" + (b"\x01" if value else b"\x00")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"where: {field} compares with a finite number, got {value!r}")
        return b"\x02" + struct.pack("=d", float(value))
    if isinstance(value, str):
        b = value.encode("utf-8")
        return b"\x03" + struct.pack("=I", len(b)) + b
    raise TypeError(f"where: {field} compares with a str, number, bool or None, got {type(value).__name__}")


def _clauses(where: Mapping[str, Any], out: list[bytes]) -> None:
    for field, cond in where.items():
        if not isinstance(field, str) or not field:
            raise TypeError(f"where: field names must be non-empty str, got {field!r}")
        if field == "$and":
            if not isinstance(cond, (list, tuple)) or not all(isinstance(c, Mapping) for c in cond):
                raise TypeError("where: $and takes a list of dicts")
            for c in cond:
                _clauses(c, out)
            continue
        if field.startswith("$"):
            raise ValueError(f"where: {field} is not supported (a conjunction of fields, $and; ops {', '.join(_OPS)})")
        code = 0 if field.startswith("metadata.") else _FIELDS.get(field, 0)
        key = field[len("metadata.") :] if field.startswith("metadata.") else field
        if code == 0 and not key:
            raise ValueError("where: metadata. needs a key name after it")
        ops = cond if isinstance(cond, Mapping) else {"$eq": cond}
        if not ops:
            raise ValueError(f"where: {field} has an empty condition")
        for op, arg in ops.items():
            if op not in _OPS:
                raise ValueError(f"where: {field} uses {op!r}; the operators are {', '.join(_OPS)}")
            values: Sequence[Any]
            if op == "$in":
                if not isinstance(arg, (list, tuple, set, frozenset)) or not arg:
                    raise TypeError(f"where: {field} $in takes a non-empty list")
                if len(arg) > _MAX_IN_VALUES:
                    raise ValueError(f"where: {field} $in takes at most {_MAX_IN_VALUES} values")
                values = list(arg)
            else:
                values = [arg]
            kb = key.encode("utf-8") if code == 0 else b""
            encoded = b"".join(_value(v, field, code) for v in values)
            out.append(struct.pack("=BBI", code, _OPS[op], len(kb)) + kb + struct.pack("=I", len(values)) + encoded)


def encode_where(where: Union[None, Mapping[str, Any]]) -> bytes:
    """The engine's filter spec for ``where`` (``b""``: no filter)."""
    if where is None:
        return b""
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a dict, got {type(where).__name__}")
    # Depth and number ranges first, without recursion: _clauses recurses into $and.
    check_json_value(where, "where", leaves=(_dt.datetime,))
    clauses: list[bytes] = []
    _clauses(where, clauses)
    if len(clauses) > _MAX_CLAUSES:
        raise ValueError(f"where has {len(clauses)} clauses, more than {_MAX_CLAUSES}")
    if not clauses:
        return b""
    return struct.pack("=I", len(clauses)) + b"".join(clauses)
