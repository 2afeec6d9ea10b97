"""The temporary directories an import builds beside its target
(``<target>.importing-XXXX``), and the removal of those a killed import
left behind.

An import holds an exclusive ``flock`` on ``.import.lock`` inside its
directory for as long as it runs; the kernel drops it when the process
dies, however it dies. So a directory whose lock file can be locked is
provably abandoned, and one whose lock is held is in use and is left alone.
A directory without the lock file (an import that died between creating
the directory and its lock, or one from a build before the lock) is left
too: nothing proves it abandoned. ``compact.tmp/`` is the engine's
business: a writable open of the store removes it.
"""

from __future__ import annotations

import fcntl
import os
import shutil

__all__ = ["LOCK_NAME", "PREFIX", "hold", "release", "remove_abandoned_imports"]

LOCK_NAME = ".import.lock"
PREFIX = ".importing-"


def hold(tmp: str) -> int:
    """Locks the import directory ``tmp`` as in use; returns the lock's fd
    (the lock lasts until it is closed or the process dies)."""
    fd = os.open(os.path.join(tmp, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def release(tmp: str) -> None:
    """Removes the lock file before ``tmp`` becomes the store (the lock stays
    held through its fd until the caller closes it)."""
    os.unlink(os.path.join(tmp, LOCK_NAME))


def remove_abandoned_imports(target: str) -> list[str]:
    """Removes the import directories of ``target`` that no live import
    holds; returns their paths."""
    parent, base = os.path.split(os.path.abspath(target))
    removed: list[str] = []
    try:
        names = os.listdir(parent or ".")
    except OSError:
        return removed
    for name in names:
        if not name.startswith(base + PREFIX):
            continue
        tmp = os.path.join(parent, name)
        lock = os.path.join(tmp, LOCK_NAME)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue  # no lock file: not provably abandoned
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live import holds it
            # The file locked must still be the directory's lock (an import
            # that finished unlinked it and renamed the directory away).
            held, now = os.fstat(fd), os.stat(lock)
            if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino):
                continue
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
