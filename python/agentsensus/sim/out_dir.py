"""The output directory, checked before a run so that a bad one costs seconds, not the run.

``run`` writes ``report.html`` and ``metrics.json`` only at the end; a path it
could not write there would lose every result. `check_out` refuses such
a path up front and writes nothing, not even the directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["OUTPUTS", "check_out"]

#: The files a run writes into its output directory.
OUTPUTS = ("report.html", "metrics.json")


def _writable(directory: Path) -> bool:
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        # An unnamed file (O_TMPFILE where the OS has it) proves a write without leaving one:
        # permission bits say nothing for root, nor on a read-only mount.
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError:
        return False
    return True


def check_out(out: str | Path, outputs: tuple[str, ...] = OUTPUTS) -> Path:
    """``out`` as a `Path` when a run can write ``outputs`` into it, else ``ValueError`` (one line).

    Refused: an existing file; a path under a file; a directory (or, when
    ``out`` does not exist yet, its nearest existing ancestor) this process
    cannot write; an output name that is taken by a directory.
    """
    path = Path(out).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{str(out)!r} is a file, not a directory")
    existing = path
    while not existing.exists():
        # The nearest ancestor that exists is where mkdir would start.
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{str(out)!r} cannot be a directory: {str(existing)!r} is a file")
    if not _writable(existing):
        raise ValueError(f"{str(out)!r} is not writable: {str(existing)!r} refuses new files")
    taken = [name for name in outputs if (path / name).exists() and not (path / name).is_file()]
    if taken:
        raise ValueError(f"{str(out)!r} holds a directory named {taken[0]!r} where the run writes a file")
    return path
