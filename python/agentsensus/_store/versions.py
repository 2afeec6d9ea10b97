"""Versions of records, as the Python layer asks for them: recall's
``as_of`` round (a clause of the engine's filter spec), the links a
``Memory`` read by id carries, and a record's chain of versions
(``Store.chain``) and its supersession events (``Store.history``).

The engine keeps the chains and decides what is current for an owner: a
record is superseded for an owner once that owner holds a later record of its
chain, from the round it came to hold it. ``as_of=R`` asks for what the owner held at round R: the records it held
by then that no later record it held by then superseded.
"""

from __future__ import annotations

import struct
from typing import Any, Optional

from ..records import Change
from .validation import check_round

__all__ = ["with_as_of", "links_of", "supersession_events"]

# recall_filter.hpp: field 4 is the as_of round, op 0 (eq), one number.
_AS_OF = struct.pack("=BBII", 4, 0, 0, 1) + b"\x02"


def with_as_of(spec: bytes, as_of: Any) -> bytes:
    """The filter ``spec`` (``encode_where``'s bytes, or b"") with the as_of
    round added; ``spec`` itself when ``as_of`` is None."""
    if as_of is None:
        return spec
    try:
        r = check_round(as_of)
    except (TypeError, ValueError) as e:
        raise type(e)(str(e).replace("round", "as_of", 1)) from None
    clause = _AS_OF + struct.pack("=d", float(r))
    if not spec:
        return struct.pack("=I", 1) + clause
    (n,) = struct.unpack_from("=I", spec)
    return struct.pack("=I", n + 1) + spec[4:] + clause


def links_of(engine: Any, rid: int) -> tuple[Optional[int], Optional[int], Optional[int]]:
    """Record ``rid``'s (supersedes, superseded_by, valid_until)."""
    got: tuple[Optional[int], Optional[int], Optional[int]] = engine.versions_of([rid])[0]
    return got


def supersession_events(engine: Any, rid: int) -> list[Change]:
    """The ``SUPERSEDES`` event of the record that ``rid`` superseded (made
    with it) and the ``SUPERSEDED`` event of the record that superseded
    ``rid`` (when it was made), for ``Store.history``. ``old`` and ``new``
    are the two records' texts, ``owner`` and ``round`` the newer record's
    maker and round."""
    older, newer, _until = links_of(engine, rid)
    events: list[Change] = []
    this = engine.get(rid)  # (id, text, owners, round)
    if older is not None:
        before = engine.get(older)
        events.append(Change("SUPERSEDES", before[1], this[1], _maker(engine, rid), int(this[3])))
    if newer is not None:
        after = engine.get(newer)
        events.append(Change("SUPERSEDED", this[1], after[1], _maker(engine, newer), int(after[3])))
    return events


def _maker(engine: Any, rid: int) -> str:
    """Who made record ``rid``: its said row 0's owner ("" for a record without rows)."""
    _text, said = engine.said(rid)
    return next((str(o) for n, o, _r, _t in said if int(n) == 0), "")
