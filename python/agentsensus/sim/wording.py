"""Reading an account back: its time phrase, its frame and its core.

Accounts may say when it happened ("In scene 3, ...", "... in round 7.";
only with time stamps on), wrap what was said in a frame ('Hamlet told me:
"..."') or report it in indirect speech ('Hamlet told me that he would
...'), and put what was done after a colon ("I saw this: ..."). The core is
what the account reports; the frame is who reports it to whom. The judge
compares cores, and an agent retelling a memory says its core. A text with
no time phrase reads with ``time=None``. Everything here reads text only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["TIME", "REPORTED", "Reading", "read", "time_phrase", "capitalised", "NOT_NAMES"]

#: "In scene 3" / "in round 12": when a move or an act happened.
TIME = re.compile(r"\b[Ii]n (scene|round) (\d+)\b,?\s*")
_QUOTE = re.compile(r'"([^"]+)"')
#: Reported speech: 'Hamlet told me that ...', 'I heard Osric ask Hamlet whether ...', 'Bernardo asked who ...'.
REPORTED = re.compile(
    r"^(?:I (?:heard|overheard) )?[^\":,;.!?]{1,80}? (?:told|said|asked|tell|say|ask)(?: [^\":,;.!?]{1,60}?)?"
    r" (?:(?:that|whether|if|to) |(?=(?:who|whom|whose|what|why|where|when|how|which) ))(?P<core>\S.*)$",
    re.DOTALL,
)
_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
# A colon is no sentence start here: what follows "I saw this:" is the core.
_SENTENCE_START = re.compile(r"(^\s*|[.!?;]\s+|\"|\u201c|--\s*)$")

#: Capitalised words that name no one (function words, interjections, titles alone).
NOT_NAMES = frozenset(
    """a an the i he she it we they you his her its our their my your this that these those
    there here then when where what who whom why how and but or so yet if in on at to of by for
    from with as after before while o oh ay no yes not now thus thou thee thy sir lord lady
    exit exeunt enter god heaven good my madam well come go let""".split()
)


@dataclass(frozen=True)
class Reading:
    """What an account says: ``time`` (``("round", 7)`` or ``None``), whether
    its core is speech (``quoted``: in quotation marks or reported), the
    ``core`` text and the ``names`` it mentions (in the quotation or the
    reported clause, or anywhere in a plain report, whose frame names no one)."""

    time: tuple[str, int] | None
    quoted: bool
    core: str
    names: frozenset[str]


def time_phrase(when: str) -> str:
    """``"round 7"`` -> ``"In round 7"``."""
    return f"In {when}" if when else ""


@lru_cache(maxsize=1 << 17)
def read(text: str) -> Reading:
    """Split ``text`` into its time phrase, frame and core."""
    q = _QUOTE.search(text)
    # A retold report carries its own time inside the quotation: that one counts.
    m = (TIME.search(q.group(1)) if q else None) or TIME.search(text)
    time = (m.group(1), int(m.group(2))) if m else None
    if q:
        core = q.group(1)
        # A retelling quotes a report with its frame ("In scene 3, Hamlet said: ..."): its core is after the colon.
        core = TIME.sub("", core, count=1) if TIME.match(core) else core
        core = core.split(": ", 1)[1] if ": " in core.rstrip(": ") else core
        names = capitalised(core)
        quoted = True
    elif (rep := REPORTED.match(TIME.sub("", text, count=1) if TIME.match(text) else text)) is not None:
        # Reported speech reads as a quotation does: the clause after the frame is the core.
        core = rep.group("core")
        names = capitalised(core)
        quoted = True
    else:
        quoted = False
        core = text.rsplit(": ", 1)[-1] if ": " in text else text
        names = capitalised(text)
    core = TIME.sub("", core).strip(" ,.;:")
    return Reading(time, quoted, core, names)


def capitalised(text: str) -> frozenset[str]:
    """Capitalised words of ``text`` that are not sentence openers or function
    words: the names it mentions, as well as text alone can tell."""
    out = set()
    for m in _WORD.finditer(text):
        w = m.group(0)
        if not w[:1].isupper() or w.casefold() in NOT_NAMES:
            continue
        if _SENTENCE_START.search(text[: m.start()]):
            continue
        out.add(w.rstrip("'\u2019s") if w.endswith(("'s", "\u2019s")) else w)
    return frozenset(out)
