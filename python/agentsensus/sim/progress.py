"""A one-line progress bar on stderr (redrawn in place on a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``update(done, note)`` redraws ``label [#####.....] done/total note``.

    On a terminal the line is redrawn in place; otherwise (a log, CI) a line
    is printed at most every few seconds and at the end, so logs stay short.
    """

    def __init__(self, label: str, total: int, *, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.label, self.total = label, max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._start = self._last = time.perf_counter()

    def update(self, done: int, note: str = "") -> None:
        """Reports ``done`` steps (with ``note``) when enabled."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if not self.tty and now - self._last < 5.0:
            return
        self._last = now
        filled = int(24 * min(done, self.total) / self.total)
        line = f"{self.label} [{'#' * filled}{'.' * (24 - filled)}] {done}/{self.total} {note}"
        self.stream.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        self.stream.flush()

    def close(self, note: str = "") -> None:
        """Final state and the elapsed time, ending the line."""
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self._start
        filled = "#" * 24
        line = f"{self.label} [{filled}] done in {elapsed:.1f}s {note}"
        self.stream.write(("\r" + line + "\x1b[K\n") if self.tty else line + "\n")
        self.stream.flush()
