"""A record's history, read from its said rows and its merge-log entries
(``Store.history``), and the in-place update that writes one.

The merge log holds one entry per text a merge (or an update) let go of:
the survivor's text after it (``kept``) and the text dropped. The history is
that log in order, told as changes of the record's text: an entry that
changes the running text is an ``UPDATE`` from it, one that leaves it is a
``MERGE`` (the statement dropped was absorbed). The text the record was
made with is the first entry's dropped text when that entry changed the text
(an update, or a merge whose statement is a said row of another text), else
the first entry's kept text; a record without entries still has its text.
A deleted record has no history: its words leave the store with it.
"""

from __future__ import annotations

from typing import Any

from ..records import Change
from .record_meta import to_datetime

__all__ = ["history_of"]


def history_of(engine: Any, rid: int) -> list[Change]:
    """Record ``rid``'s changes, oldest first, from ``engine`` (a ``_core.Engine``)."""
    entries = engine.merges_of(rid)  # (seq, survivor, kept, discarded, owner, round), seq ascending
    text, said = engine.said(rid)  # said rows: (n, owner, round, text)
    _, _, _, _, created, _, _ = engine.get_meta(rid, "")
    said_text = {int(n): t for n, _o, _r, t in said}
    creator = next(((o, int(r)) for n, o, r, _t in said if int(n) == 0), None)
    if entries:
        seq, _s, kept, discarded, _o, _r = entries[0]
        # A change logs the text before first; an absorbed statement is its own said row.
        changed = said_text.get(int(seq)) != discarded
        first = discarded if changed and kept != discarded else kept
    else:
        first = text
    owner, rnd = creator if creator is not None else (entries[0][4] if entries else "", 0)
    events = [Change("ADD", None, first, owner, rnd, to_datetime(created))]
    running = first
    last_seq_owner = None
    for seq, _s, kept, _discarded, who, r in entries:
        if kept != running:
            events.append(Change("UPDATE", running, kept, who, int(r)))
            running = kept
            last_seq_owner = (int(seq), who)
        elif last_seq_owner == (int(seq) - 1, who):
            last_seq_owner = None  # the second text one merge let go of: part of the UPDATE before
        else:
            events.append(Change("MERGE", running, running, who, int(r)))
    return events
