"""Scopes: which records a statement may meet.

A deposit names a scope (``Store.deposit(..., scope=...)``, or the store's
``scope`` default). Its statements merge only into records of that scope,
only that scope's records are candidates, exact duplicates and judge
requests, and a new record stays in it for good. The engine enforces it:
a commit naming a record of another scope is refused. The default scope is
``""``: every record of a store written before scopes is in it.
docs/reliability.md, "Scopes: who may see what", says what scopes protect
against and what they do not.
"""

from __future__ import annotations

from typing import Any

from .validation import MAX_OWNER_BYTES, _check_no_control, check_text, check_visible

__all__ = ["DEFAULT_SCOPE", "check_scope"]

#: The scope of deposits that name none, and of every record of an older store.
DEFAULT_SCOPE = ""


def check_scope(scope: Any) -> str:
    """A scope name: ``""`` (the default scope), or a str of at most
    MAX_OWNER_BYTES UTF-8 bytes with no control character and a visible one
    (the rules of owner names)."""
    if isinstance(scope, str) and scope == DEFAULT_SCOPE:
        return scope
    value = check_text(scope, "scope", MAX_OWNER_BYTES, f"scope must be '' (the default) or a name, got {scope!r}")
    return check_visible(_check_no_control(value, "scope"), "scope")
