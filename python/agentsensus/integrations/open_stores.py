"""The stores the adapters have open in this process, shared by path.

A store opens once per process (the engine refuses a second open of the same
file), so two adapters on one path, e.g. a memory and the one
``load_component`` makes from its saved config, must share one ``Store``.
`acquire` hands out the open one (counting its users) or opens it;
`release` closes it when its last user lets go. A ``Store`` the caller
opened and gave an adapter is `lend`-ed: found by path like the rest,
never closed here.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Mapping

from ..store import Store
from .judge_spec import judge_spec

__all__ = ["acquire", "release", "lend", "key_of"]

_lock = threading.Lock()
_opened: dict[str, tuple[Store, int]] = {}  # key -> (store, users): opened here
_lent: "weakref.WeakValueDictionary[str, Store]" = weakref.WeakValueDictionary()  # the callers'


def key_of(path: "str | os.PathLike[str]") -> str:
    """The registry key of a store path (its real path)."""
    return os.path.realpath(os.fspath(path))


def lend(store: Store) -> None:
    """Records a caller's open ``Store`` so that adapters opening its path share it."""
    with _lock:
        key = key_of(store.path)
        if key not in _opened:
            _lent[key] = store


def acquire(path: "str | os.PathLike[str]", options: Mapping[str, Any]) -> tuple[Store, bool]:
    """The open store at ``path`` (checked against ``options``), or a new one
    opened with them. Returns it and whether it must be `release`-d."""
    key = key_of(path)
    with _lock:
        lent = _lent.get(key)
        if lent is not None and not lent.closed:
            _check(lent, options)
            return lent, False
        if key in _opened:
            store, users = _opened[key]
            if not store.closed:
                _check(store, options)
                _opened[key] = (store, users + 1)
                return store, True
        store = Store(path, **options)
        _opened[key] = (store, 1)
        return store, True


def release(store: Store) -> None:
    """One user of an acquired store lets go; the last one closes it."""
    with _lock:
        # Found by identity: the path may resolve elsewhere by now (a relative
        # path after a chdir).
        key = next((k for k, (s, _) in _opened.items() if s is store), None)
        if key is None:
            return
        held = _opened[key]
        if held[1] > 1:
            _opened[key] = (store, held[1] - 1)
            return
        del _opened[key]
    store.close()


def _check(store: Store, options: Mapping[str, Any]) -> None:
    """An open store serves a new user only with the options it asks for
    (those a Store exposes); anything else is refused in one line."""
    have: dict[str, Any] = {
        "dim": store.dim,
        "judge": store.judge,
        "min_similarity": store.min_similarity,
        "candidates": store.candidates,
        "readonly": store.readonly,
        "metric": store.metric,
        "disclosure": store.disclosure,
    }
    for name, want in options.items():
        if name not in have or want is None:
            continue
        got = have[name]
        if name == "judge":
            same = want is got or _spec(want) == _spec(got) is not None
        elif name == "metric":
            same = str(want) == got
        else:
            same = want == got
        if not same:
            raise ValueError(
                f"the store at {store.path} is already open in this process with {name}={got!r}; asked for {want!r}"
            )


def _spec(judge: Any) -> "str | None":
    try:
        return judge_spec(judge)
    except ValueError:
        return None
