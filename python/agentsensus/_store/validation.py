"""Argument checks shared by the Store's methods. Each error names the
argument and what was wrong, and is raised before anything is written."""

from __future__ import annotations

import bisect
import math
import numbers
import unicodedata
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from .. import _core

__all__ = [
    "check_text",
    "check_texts",
    "check_visible",
    "check_owner",
    "check_statements",
    "check_round",
    "check_vectors",
    "check_query",
    "check_k",
    "check_json_value",
    "MAX_NESTING",
    "INT64_MIN",
    "INT64_MAX",
    "MAX_TIME_US",
]

MAX_STATEMENT_BYTES: int = _core.MAX_STATEMENT_BYTES
MAX_STATEMENTS_PER_DEPOSIT: int = _core.MAX_STATEMENTS_PER_DEPOSIT
MAX_OWNER_BYTES: int = _core.MAX_OWNER_BYTES
MAX_OWNERS_PER_RECORD: int = _core.MAX_OWNERS_PER_RECORD
#: The deepest nesting of lists and objects a metadata value, a ``where``
#: filter or an export line may have (the top level is depth 1).
MAX_NESTING: int = 32
INT64_MIN: int = -(2**63)
INT64_MAX: int = 2**63 - 1
#: The latest time a record or item may carry: 9999-12-31 23:59:59.999999
#: UTC in microseconds since the epoch, the last one a datetime can show.
MAX_TIME_US: int = 253_402_300_799_999_999

# Unicode categories an owner name may not hold: controls, format
# characters (zero-width, bidi controls), line and paragraph separators,
# private-use and unassigned code points. Each shows nothing, or something
# that differs between fonts, so two names that look alike could be two owners.
_REFUSED_IN_NAMES = {
    "Cc": "control",
    "Cf": "format",
    "Zl": "line separator",
    "Zp": "paragraph separator",
    "Co": "private-use",
    "Cn": "unassigned",
    "Cs": "surrogate",
}

# The engine's table of code points that show nothing (cpp/include/agentsensus/visible_text.hpp):
# controls, blanks, zero-width and other format characters.
_INVISIBLE: list[tuple[int, int]] = sorted((int(lo), int(hi)) for lo, hi in _core.INVISIBLE_RANGES)
_INVISIBLE_LO = [lo for lo, _ in _INVISIBLE]


def _invisible(ch: str) -> bool:
    cp = ord(ch)
    i = bisect.bisect_right(_INVISIBLE_LO, cp) - 1
    return i >= 0 and cp <= _INVISIBLE[i][1]


def check_visible(value: str, name: str) -> str:
    """Refuses text with no visible character after NFKC normalization
    (only NUL, blanks, zero-width or other format characters): it would
    be stored as a text nobody can read."""
    if all(_invisible(ch) for ch in unicodedata.normalize("NFKC", value)):
        raise ValueError(f"{name} has no visible character, got {value!r}")
    return value


def _check_no_control(value: str, name: str) -> str:
    for i, ch in enumerate(value):
        if unicodedata.category(ch) == "Cc":
            raise ValueError(f"{name} has a control character (U+{ord(ch):04X} at index {i}), got {value!r}")
    return value


def check_text(value: Any, name: str, limit: int, empty: str) -> str:
    """A non-blank str of at most ``limit`` UTF-8 bytes; ``empty`` is the
    message for a blank one. Shared by owners, statements and lineage keys."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(empty)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise ValueError(f"{name} is not valid Unicode text: {e}") from None
    if size > limit:
        raise ValueError(f"{name} is {size} bytes in UTF-8; the limit is {limit}")
    return value


# Names already read back by check_owner(existing=True): a str is immutable,
# so its checked form never changes, and a recall pays its NFC pass and
# UTF-8 measure once per name, not once per call (it runs holding the GIL).
# Bounded: past _KNOWN_MAX names the rest are checked every time.
_known_owners: dict[str, str] = {}
_KNOWN_MAX = 1 << 14


def check_owner(owner: Any, name: str = "owner", *, existing: bool = False) -> str:
    """An owner name, NFC-normalized (two spellings of one text are one
    owner): a non-empty str of at most MAX_OWNER_BYTES UTF-8 bytes with a
    visible character, none of Unicode's categories Cc, Cf, Zl, Zp, Co, Cn
    (controls, zero-width and bidi controls, separators, private-use and
    unassigned code points), and no compatibility character (its NFKC form
    is itself: a fullwidth "\uff21lice" is refused, naming "Alice"). Letters
    of other scripts that look alike (Cyrillic "\u0430") stay distinct
    owners. With ``existing`` (reads and forget) only NFC and the size: a
    store written before the other checks may hold such a name, and it must
    stay readable and forgettable."""
    if existing and type(owner) is str:
        known = _known_owners.get(owner)
        if known is not None:
            return known
    value = check_text(owner, name, MAX_OWNER_BYTES, f"{name} must be a non-empty name, got {owner!r}")
    try:
        value = unicodedata.normalize("NFC", value)
    except UnicodeError as e:  # lone surrogates and the like
        raise ValueError(f"{name} is not valid Unicode text: {e}") from None
    if existing:
        value = check_text(value, name, MAX_OWNER_BYTES, f"{name} must be a non-empty name, got {owner!r}")
        if type(owner) is str and len(_known_owners) < _KNOWN_MAX:
            _known_owners[owner] = value
        return value
    check_visible(_check_no_control(value, name), name)
    for i, ch in enumerate(value):
        kind = _REFUSED_IN_NAMES.get(unicodedata.category(ch))
        if kind is not None:
            raise ValueError(f"{name} has a {kind} character (U+{ord(ch):04X} at index {i}), got {owner!r}")
    folded = unicodedata.normalize("NFKC", value)
    if folded != value:
        raise ValueError(f"{name} has compatibility characters (fullwidth, ligatures and the like): write {folded!r}")
    return check_text(value, name, MAX_OWNER_BYTES, f"{name} must be a non-empty name")


def check_json_value(value: Any, name: str, *, max_depth: int = MAX_NESTING, leaves: tuple[type, ...] = ()) -> Any:
    """A JSON-like value (dicts with str keys, lists or tuples, str, bool,
    None, ints within int64, finite floats, and values of ``leaves``) nested
    at most ``max_depth`` deep; returns it unchanged. Walked without recursion, so a hostile depth
    is a one-line ``ValueError`` naming ``name``, never a ``RecursionError``;
    an int beyond int64 or a NaN/inf float is a ``ValueError``, another
    type a ``TypeError``."""
    stack: list[tuple[Any, int, str]] = [(value, 1, name)]
    while stack:
        v, depth, where = stack.pop()
        if isinstance(v, (Mapping, list, tuple, set, frozenset)):
            if depth > max_depth:
                raise ValueError(f"{name} is nested deeper than {max_depth} levels")
            if isinstance(v, Mapping):
                for k, child in v.items():
                    if not isinstance(k, str):
                        raise TypeError(f"{where} has a key of type {type(k).__name__}; keys must be str")
                    stack.append((child, depth + 1, f"{where}[{k!r}]"))
            else:
                stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(v))
        elif isinstance(v, bool) or v is None or isinstance(v, (str, *leaves)):
            continue
        elif isinstance(v, numbers.Integral):
            if not INT64_MIN <= int(v) <= INT64_MAX:
                raise ValueError(f"{where} is an integer outside int64 (-2**63 .. 2**63-1)")
        elif isinstance(v, numbers.Real):
            if not math.isfinite(float(v)):
                raise ValueError(f"{where} is {v!r}: JSON without NaN or inf takes finite numbers only")
        else:
            raise TypeError(f"{where} is a {type(v).__name__}, which is not JSON-serializable")
    return value


def check_statements(statements: Any, name: str = "statements") -> list[str]:
    """A deposit's statements: a sequence (not a str) of 1 to
    MAX_STATEMENTS_PER_DEPOSIT non-empty strs of at most MAX_STATEMENT_BYTES each."""
    if isinstance(statements, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a single {type(statements).__name__}")
    try:
        out = list(statements)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of str, got {type(statements).__name__}") from None
    if not out:
        raise ValueError(f"{name} is empty: a deposit needs at least one statement")
    if len(out) > MAX_STATEMENTS_PER_DEPOSIT:
        raise ValueError(f"{name} has {len(out)} statements; the limit is {MAX_STATEMENTS_PER_DEPOSIT}")
    for i, s in enumerate(out):
        check_text(s, f"{name}[{i}]", MAX_STATEMENT_BYTES, f"{name}[{i}] is empty or only whitespace")
        check_visible(s, f"{name}[{i}]")
    return out


def check_round(round: Any) -> int:
    """A round: an int from 0 to 2**32-1."""
    if isinstance(round, bool) or not isinstance(round, numbers.Integral):
        raise TypeError(f"round must be an int, got {type(round).__name__}")
    r = int(round)
    if r < 0 or r > 0xFFFFFFFF:
        raise ValueError(f"round must be between 0 and 2**32-1, got {r}")
    return r


def check_k(k: Any) -> int:
    """A recall size: an int >= 1."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return int(k)


def _as_float32(vectors: Any, name: str) -> npt.NDArray[np.float32]:
    try:
        a = np.asarray(vectors)
    except Exception as e:  # ragged lists and the like
        raise ValueError(f"{name} is not an array of numbers: {e}") from None
    if a.dtype.kind != "f":
        raise TypeError(f"{name} must hold floats (float32 preferred), got dtype {a.dtype}")
    # float32 C-contiguous input passes through without a copy.
    return np.ascontiguousarray(a, dtype=np.float32)


def _check_finite(a: npt.NDArray[np.float32], name: str, cos: bool) -> None:
    if not np.isfinite(a).all():
        row = int(np.argwhere(~np.isfinite(a))[0][0]) if a.ndim == 2 else 0
        raise ValueError(f"{name}[{row}] has NaN or inf" if a.ndim == 2 else f"{name} has NaN or inf")
    if cos:
        norms = np.einsum("...i,...i->...", a, a)
        if a.ndim == 2 and (norms == 0).any():
            raise ValueError(f"{name}[{int(np.argmax(norms == 0))}] has zero norm, which metric 'cos' refuses")
        if a.ndim == 1 and norms == 0:
            raise ValueError(f"{name} has zero norm, which metric 'cos' refuses")


def check_vectors(vectors: Any, n: int, dim: int, metric: str, name: str = "vectors") -> npt.NDArray[np.float32]:
    """``n`` finite float32 rows of ``dim`` (non-zero under ``cos``), C-contiguous."""
    a = _as_float32(vectors, name)
    if a.ndim == 1 and n == 1 and a.shape[0] == dim:
        a = a.reshape(1, dim)
    if a.ndim != 2 or a.shape != (n, dim):
        raise ValueError(f"{name} must have shape ({n}, {dim}) for {n} statement(s), got {a.shape}")
    _check_finite(a, name, metric == "cos")
    return a


def check_query(query: Any, dim: int, metric: str) -> npt.NDArray[np.float32]:
    """One finite float32 vector of ``dim`` (non-zero under ``cos``); an (1, dim) array is accepted."""
    a = _as_float32(query, "query")
    if a.ndim == 2 and a.shape[0] == 1:
        a = a.reshape(-1)
    if a.ndim != 1 or a.shape[0] != dim:
        raise ValueError(f"query must have shape ({dim},), got {a.shape}")
    # A finite, non-zero sum of squares proves the query finite and non-zero
    # in one numpy call (recall runs this holding the GIL, which readers in
    # other threads wait for); anything else gets the full check's message.
    if not 0.0 < a.dot(a) < np.inf:
        _check_finite(a, "query", metric == "cos")
    return a


def check_texts(texts: Sequence[str]) -> list[str]:
    """An embedder's input: a list (not a str) of str, as a list."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str, not a str")
    out = list(texts)
    for row, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{row}] must be str, got {type(text).__name__}")
    return out
