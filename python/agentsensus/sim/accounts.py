"""Each witness's own account of an event, split into statements.

A speaker, a listener and an overhearer word the same speech differently,
and each in its own words (`variation`): 'I told Horatio: "..."',
'"...," Hamlet said to us.', 'I heard Hamlet tell Horatio: "..."', or in
indirect speech ('Hamlet told us that he would ...', `paraphrase`),
with words substituted, parts left out, now and then a wrong name. With time
stamps on (``Variation(timestamps=True)``) every account says when it
happened ("In round 7, I saw Osric enter the hall."). These texts are the
only thing any memory backend receives.

`account` returns each statement with the index of the clause of the
event it reports: the simulation's provenance, which stays with the kernel
and the metrics and never reaches a backend or a judge.
"""

from __future__ import annotations

import re

from .paraphrase import indirect
from .variation import Variation
from .wording import time_phrase
from .world import Event

__all__ = ["split_statements", "in_sentence", "account", "names", "has_words", "MIN_WORDS"]

_CLAUSE_END = re.compile(r"(?:(?<=[.!?;:])|(?<=[.!?;:]['\"]))\s+(?=\S)")
_WORD = re.compile(r"\w+")
MIN_WORDS = 4
_PLAIN = Variation(0.0)
# A retelling leads with the time of what it retells, and a retold speech with who said it.
# Without time stamps a retold speech leads with who said it alone ("Hamlet said: ...").
_RETOLD = re.compile(r"^((?:In (?:scene|round) \d+, )?(?:[A-Z][^:\"]{0,79}? said: )?)(.+)$", re.DOTALL)


def has_words(text: str) -> bool:
    """True when ``text`` has at least one word (a say of only punctuation has none)."""
    return bool(_WORD.search(text or ""))


def split_statements(text: str, min_words: int = MIN_WORDS) -> list[str]:
    """Split a speech at sentence and clause ends into statements.

    A clause shorter than ``min_words`` words joins the next one (the last
    joins the previous), so a statement carries enough content to be judged;
    fragments with no word at all are dropped.
    """
    out: list[str] = []
    current = ""
    for part in _CLAUSE_END.split(text.strip()):
        current = f"{current} {part}".strip() if current else part.strip()
        if len(_WORD.findall(current)) >= min_words:
            out.append(current)
            current = ""
    if current and _WORD.search(current):
        if out and len(_WORD.findall(current)) < min_words:
            out[-1] = f"{out[-1]} {current}"
        else:
            out.append(current)
    return out


def in_sentence(place: str) -> str:
    """``A room in the castle`` -> ``a room in the castle`` (mid-sentence)."""
    first, _, rest = place.partition(" ")
    if first in ("A", "An", "The", "Another") and rest:
        return first.lower() + " " + rest
    return place


def names(people: tuple[str, ...] | list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    people = list(people)
    if len(people) <= 1:
        return "".join(people)
    return ", ".join(people[:-1]) + " and " + people[-1]


def _quote(text: str) -> str:
    return text.replace('"', "'").strip()


def _say(event: Event, witness: str, v: Variation) -> list[tuple[str, int]]:
    speakers = event.actors
    audience = event.targets or tuple(w for w in event.witnesses if w not in speakers)
    others = [w for w in event.witnesses if w != witness]
    rng = v.rng("frame", event.seq, witness)
    said = names([v.name(rng, s, others) for s in speakers])
    when = time_phrase(event.when) if v.timestamps else ""
    lead = f"{when}, " if when else ""
    tail = f" {when.lower()}" if when else ""
    # Indirect speech: frames of a statement, an order and a question, {} for the reported clause.
    if witness in speakers:
        co = [s for s in speakers if s != witness]
        who = (names(co) + " and I") if co else "I"
        if not audience:
            to = "ourselves" if co else "myself"
            frames = [f'{lead}{who} said to {to}: "{{}}"', f'"{{}}", {who} said to {to}{tail}.']
            reported = (f"{lead}{who} said that {{}}", f"{lead}{who} told {to} to {{}}", f"{lead}{who} asked {to} {{}}")
        else:
            to = names(audience) if len(audience) <= 2 else "them"  # naming a crowd would drown the content
            frames = [
                f'{lead}{who} told {to}: "{{}}"',
                f'{lead}{who} said to {to}: "{{}}"',
                f'"{{}}", {who} told {to}{tail}.',
            ]
            reported = (
                f"{lead}{who} told {to} that {{}}",
                f"{lead}{who} told {to} to {{}}",
                f"{lead}{who} asked {to} {{}}",
            )
        speaker, addressee, many = ("I", to if len(audience) == 1 else None, len(audience) > 1)
    elif witness in audience or not event.targets:
        listeners = [w for w in event.witnesses if w not in speakers]
        us = "us" if len(listeners) > 1 else "me"
        frames = [
            f'{lead}{said} told {us}: "{{}}"',
            f'"{{}}", {said} said to {us}{tail}.',
            f'{lead}I heard {said} say: "{{}}"',
        ]
        reported = (
            f"{lead}{said} told {us} that {{}}",
            f"{lead}{said} told {us} to {{}}",
            f"{lead}{said} asked {us} {{}}",
        )
        speaker, addressee, many = said, "I", len(listeners) > 1
    else:
        frames = [
            f'{lead}I heard {said} tell {names(event.targets)}: "{{}}"',
            f'{lead}{said} told {names(event.targets)}, and I overheard: "{{}}"',
        ]
        reported = (
            f"{lead}I heard {said} tell {names(event.targets)} that {{}}",
            f"{lead}I heard {said} tell {names(event.targets)} to {{}}",
            f"{lead}I heard {said} ask {names(event.targets)} {{}}",
        )
        speaker, addressee, many = said, names(event.targets), len(event.targets) > 1
    frame = v.pick(rng, frames)
    frame = frame[:1].upper() + frame[1:]
    # A retelling ("In scene 3, Hamlet said: ...", "In round 2, Osric entered the hall.") keeps its
    # lead on every statement it splits into: a part left out is a part of what it retells, never
    # all of it (dropping the last comma-separated part of "In round 2, Osric entered the hall."
    # left "In round 2.", an account of nothing).
    m = _RETOLD.match(event.text)
    lead_in, body = (m.group(1), m.group(2)) if m and m.group(1) else ("", event.text)
    sentences = split_statements(body)
    out = []
    for i, s in enumerate(sentences):
        r = v.rng("say", event.seq, witness, i)
        # A listener may forget a statement of a long speech, never the only one.
        if witness not in speakers and len(sentences) > 1 and v.chance(r, 0.25):
            continue
        # A witness may report a statement in a sentence of its own instead of quoting it (60% of
        # statements at full strength, none at 0); a retelling stays quoted: it already reports words.
        if not lead_in and v.chance(r, 0.6):
            clause, kind = indirect(s, r, v.chance, speaker=speaker, addressee=addressee, many=many)
            text = reported[("that", "to", "ask").index(kind)].format(_quote(clause))
            if has_words(clause):
                out.append((text[:1].upper() + text[1:] + ".", i))
                continue
        content = _quote(lead_in + v.words(r, s))
        if frame.startswith('"'):
            content = content.rstrip(".")  # '"..., and so on," she said.'
        if has_words(content):
            out.append((frame.format(content), i))
    if not out and sentences:  # keep at least one statement of what was said
        content = _quote(lead_in + v.words(v.rng("say", event.seq, witness, 0), sentences[0]))
        if has_words(content):
            out.append((frame.format(content), 0))
    return out


def _move(event: Event, witness: str, v: Variation) -> list[tuple[str, int]]:
    verb, base = ("entered", "enter") if event.kind == "enter" else ("exited", "exit")
    when = time_phrase(event.when) if v.timestamps else ""
    place = in_sentence(event.place)
    rng = v.rng("move", event.seq, witness)
    others = [w for w in event.witnesses if w != witness]
    if witness in event.actors:
        # One's own moves are noted as observations are, by name: "I" alone
        # would leave a reader unable to tell whose move it was.
        co = [a for a in event.actors if a != witness]
        said = f"{names([witness] + co)} {verb} {place}"
        frames = [f"{when}, {said}.", f"{said}, {when.lower()}."] if when else [f"{said}."]
    else:
        movers = names([v.name(rng, a, others) for a in event.actors])
        seen = [f"I saw {movers} {base} {place}", f"{movers} {verb} {place}", f"I watched {movers} {base} {place}"]
        frames = (
            [f"{when}, {seen[0]}.", f"{when}, {seen[1]}.", f"{seen[2]}, {when.lower()}."]
            if when
            else [f"{s}." for s in seen]
        )
    return [(v.pick(rng, frames), 0)]


def _act(event: Event, witness: str, v: Variation) -> list[tuple[str, int]]:
    rng = v.rng("act", event.seq, witness)
    what = _quote(v.words(rng, event.text, drop=False)) if witness not in event.actors else event.text
    when = time_phrase(event.when) if v.timestamps else ""
    lead = f"{when}, " if when else ""
    if not event.actors:
        frames = [f"{lead}I heard it: {what}"]
    elif witness in event.actors:
        frames = [f"{lead}I did this: {what}"]
    elif witness in event.targets:
        frames = [f"{lead}this was done to me: {what}"]
    else:
        frames = [f"{lead}I saw this: {what}", f"{lead}I watched this happen: {what}"]
    text = v.pick(rng, frames)
    return [(text[:1].upper() + text[1:], 0)] if has_words(what) else []


def account(event: Event, witness: str, variation: Variation | None = None) -> list[tuple[str, int]]:
    """The statements ``witness`` deposits about ``event``, each with the
    index of the clause it reports (provenance, for the metrics only)."""
    v = variation if variation is not None else _PLAIN
    key = (event, witness)
    got = v.memo.get(key)
    if got is None:
        if event.kind == "say":
            got = _say(event, witness, v)
        elif event.kind in ("enter", "exit"):
            got = _move(event, witness, v)
        else:
            got = _act(event, witness, v)
        if len(v.memo) < 1 << 18:
            v.memo[key] = got
    return list(got)
