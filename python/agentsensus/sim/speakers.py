"""Who said what an account reports, read from its frame and its reporter.

An account of a say names its speaker in its frame, relative to whoever
reports it: "I told Horatio: ..." was said by the reporter, "Hamlet told
me: ..." and "I heard Hamlet say: ..." by Hamlet, "Hamlet and I said to
ourselves: ..." by both. Two accounts of one quotation by different
speakers are different facts ("Where is Laertes?" asked by Hamlet and by
Horatio), and only the frame tells them apart, so the judge reads it here.

A candidate record's reporter is not known, only its owners: when its text
speaks in the first person, its speaker is one of its owners.
"""

from __future__ import annotations

import re

from .wording import TIME

__all__ = ["speakers", "frame_speaker"]

_QUOTED = re.compile(r'"[^"]*"')
_HEARD = re.compile(r"^I (?:heard|overheard) (.+?) (?:say|tell|ask)\b")
_TOLD = re.compile(r"^(.+?),? (?:told|said|asked)\b")


def frame_speaker(text: str) -> str | None:
    """Who the frame of ``text`` says spoke, as written ("I", "Hamlet and I", "Hamlet"),
    or ``None`` when it is no account of a say (a move, an act, a plain report)."""
    if '"' in text:
        frame = _QUOTED.sub(" ", text)
    elif " that " in text:
        frame = text.split(" that ", 1)[0]  # indirect speech: "Hamlet told me that he ..."
    else:
        return None
    frame = TIME.sub("", frame).strip(" ,.:")
    m = _HEARD.match(frame) or _TOLD.match(frame)
    if m is None:
        return None
    who = m.group(1).strip(" ,")
    return who if who and who.lower() != "someone" else None


def speakers(text: str, reporter: str | frozenset[str] | None) -> frozenset[str] | None:
    """Who may have said what ``text`` reports. ``reporter``: who deposited it
    (a name), or the owners of a record whose depositor is unknown (a set: a
    first-person frame then means one of them). ``None``: the text does not say."""
    who = frame_speaker(text)
    if who is None:
        return None
    parts = [p.strip() for p in re.split(r",\s*|\s+and\s+", who) if p.strip()]
    out: set[str] = set()
    for p in parts:
        if p == "I":
            if reporter is None:
                return None
            if isinstance(reporter, str):
                out.add(reporter)
            else:
                out.update(reporter)
        else:
            out.add(p)
    return frozenset(out) or None
