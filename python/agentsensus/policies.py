"""Merge policies: which text a record keeps when a statement merges into it.

A policy is ``policy(existing: str, incoming: str) -> str``. The discarded
side always goes to the merge log. The built-in policies return one of their
two arguments, so a record's text is always a deposited string, verbatim.
``keep_names`` is the store's default: on the simulation's merge log it lets
a named person go in far fewer merges than ``keep_shorter`` for about the
same text discarded per merge (docs/decisions.md, "The deposit path").
"""

from __future__ import annotations

import re
from typing import Callable, Union

__all__ = ["MergePolicy", "keep_shorter", "keep_names", "capitalised_names", "resolve"]

MergePolicy = Callable[[str, str], str]

# Capitalised words that are not names when they open a sentence or stand alone.
_NOT_NAMES = frozenset(
    """a an the i he she it we they you his her its our their my your this that these those
    there here then when where what who whom why how and but or so yet if in on at to of by for
    from with as after before while o oh ay no yes not now thus thou thee thy sir lord lady
    exit exeunt enter""".split()
)
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)


def capitalised_names(text: str) -> frozenset[str]:
    """Capitalised words of ``text`` that plausibly name someone or something
    (function words like "The" or "He" are not names, nor is a word in capitals
    throughout: "DEAD" is emphasis)."""
    return frozenset(
        w
        for w in _WORD.findall(text)
        if w[:1].isupper() and not (len(w) > 1 and w.isupper()) and w.casefold() not in _NOT_NAMES
    )


def keep_shorter(existing: str, incoming: str) -> str:
    """The paper's policy: keep the shorter text (the existing one on a tie).
    It drops whatever names only the longer text holds."""
    return incoming if len(incoming) < len(existing) else existing


def keep_names(existing: str, incoming: str) -> str:
    """Keep the shorter text unless it would drop a capitalised name that the
    other text has; then keep the text that has every name of the other. When
    neither does, the record keeps its existing text (and the merge log keeps
    the other, as for every merge): one text cannot hold two wordings' names,
    and keeping the record's text spares the judge a changed candidate. The
    default policy."""
    short, long_ = (incoming, existing) if len(incoming) < len(existing) else (existing, incoming)
    ns, nl = capitalised_names(short), capitalised_names(long_)
    if nl <= ns:
        return short
    if ns <= nl:
        return long_
    return existing


_BUILTIN: dict[str, MergePolicy] = {"keep_shorter": keep_shorter, "keep_names": keep_names}


def resolve(policy: Union[str, MergePolicy]) -> MergePolicy:
    """A policy by name (``"keep_shorter"``, ``"keep_names"``) or a callable."""
    if callable(policy):
        return policy
    if isinstance(policy, str) and policy in _BUILTIN:
        return _BUILTIN[policy]
    raise ValueError(f"merge_policy must be one of {sorted(_BUILTIN)} or a callable, got {policy!r}")
