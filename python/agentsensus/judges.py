"""Equivalence judges: ``judge(requests) -> list[int | None | Supersedes]``.

A judge gets one `JudgeRequest` for every statement that has
candidates (nearest records at or above the store's ``min_similarity``, then
the records the lexical index ranks highest for its words), and
answers for each request, in order, the id of the candidate that states the
same fact (the statement merges into it), ``None`` (it becomes a new record)
or ``Supersedes(id)`` (a new record, the newer state of candidate ``id``'s
subject, linked after the last record of ``id``'s chain). ``exact``,
``threshold`` and ``never`` never answer ``Supersedes``;
``supersedes_when(judge)`` adds a conservative word rule for it.

A judge may be a plain function or (with ``Store.adeposit`` and
``Store.adeposit_many``) a coroutine function. It never runs while a write
transaction is held, so it may take as long as an LLM takes.

A call of ``deposit_many`` may carry the requests of several items (each
request names its owner and statement): the batch is judged in passes, and a
verdict must depend on its request alone (``judge_per_item=True`` asks one
item per call). Candidates staged earlier in the same batch carry negative
provisional ids; answer with them like any other id.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from ._deposit.change_rule import CHANGE_MARKERS, reports_change
from ._store.normalize import normalize_text
from .records import JudgeRequest, Supersedes

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .llm.judge import llm

__all__ = [
    "JudgeRequest",
    "Judge",
    "Verdict",
    "Supersedes",
    "exact",
    "threshold",
    "never",
    "supersedes_when",
    "CHANGE_MARKERS",
    "llm",
]

#: One answer: merge into that id, ``None`` (a new record) or ``Supersedes(id)``.
Verdict = Union[int, None, Supersedes]
Judge = Callable[[list[JudgeRequest]], Sequence[Verdict]]


def exact(requests: list[JudgeRequest]) -> list[Optional[int]]:
    """Merge only identical normalized text (NFKC, casefolded, whitespace
    collapsed). The store resolves those before calling any judge, so this
    judge mostly answers ``None``; it is the default."""
    out: list[Optional[int]] = []
    for r in requests:
        key = normalize_text(r.statement)
        out.append(next((c.id for c in r.candidates if normalize_text(c.text) == key), None))
    return out


def never(requests: list[JudgeRequest]) -> list[Optional[int]]:
    """Never merge (the "merging off" ablation)."""
    return [None] * len(requests)


def threshold(min_similarity: float) -> Callable[[list[JudgeRequest]], list[Optional[int]]]:
    """A judge that merges into the most similar candidate when its score is at
    least ``min_similarity``: a model-free stand-in for an LLM judge."""
    if not isinstance(min_similarity, (int, float)) or isinstance(min_similarity, bool):
        raise TypeError(f"min_similarity must be a number, got {type(min_similarity).__name__}")

    def judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
        out: list[Optional[int]] = []
        for r in requests:
            best = max(r.candidates, key=lambda c: c.score or float("-inf"), default=None)
            ok = best is not None and best.score is not None and best.score >= min_similarity
            out.append(best.id if ok and best is not None else None)
        return out

    judge.__name__ = f"threshold({min_similarity})"
    return judge


def supersedes_when(judge: Judge = exact) -> Callable[[list[JudgeRequest]], list[Verdict]]:
    """``judge``, plus a conservative word rule that answers
    ``Supersedes(c.id)`` when the statement reports a change of what
    candidate ``c`` says: "Alice moved to Berlin" after "Alice lives in
    Paris", "Polonius died", "The meeting was cancelled", "The budget was
    corrected to 40". Off unless asked: wrap a judge to turn it on, e.g.
    ``supersedes_when(threshold(0.8))``.

    The rule (``agentsensus._deposit.change_rule``, markers in
    `CHANGE_MARKERS`): the statement holds a change marker ("moved to",
    "now", "no longer", "died", "cancelled", "corrected to", ...); the
    candidate begins with the same subject (the statement's words before
    the marker, never a pronoun) and that subject does not go on ("Alice's
    brother", "Alice and Bob"); it shares a word with the statement besides
    the subject and the marker, or a word of the state the marker replaces
    ("lives" for "moved to"); and it does not already say the change. So
    two different people each moving retire nothing, nor does a
    restatement, nor another fact about the same subject.

    Per request: when ``judge`` answers ``None``, the first candidate (best
    ranked) the rule holds for is superseded; when ``judge`` merges into a
    candidate the rule holds for, that merge becomes ``Supersedes`` of it (a
    merge would drop the change); any other answer of ``judge`` stands.
    ``judge`` must be a plain (sync) callable."""
    if not callable(judge) or inspect.iscoroutinefunction(judge):
        raise TypeError(f"supersedes_when needs a plain (sync) judge, got {judge!r}")

    def wrapped(requests: list[JudgeRequest]) -> list[Verdict]:
        verdicts = list(judge(requests))
        if len(verdicts) != len(requests):
            return verdicts  # the store refuses the wrong length with its own message
        return [_with_changes(r, v) for r, v in zip(requests, verdicts)]

    wrapped.__name__ = f"supersedes_when({getattr(judge, '__name__', repr(judge))})"
    return wrapped


def _with_changes(r: JudgeRequest, verdict: Verdict) -> Verdict:
    if isinstance(verdict, Supersedes):
        return verdict
    changed = [c.id for c in r.candidates if reports_change(r.statement, c.text)]
    if verdict is None:
        return Supersedes(changed[0]) if changed else None
    return Supersedes(verdict) if verdict in changed else verdict


def __getattr__(name: str) -> Any:
    # ``llm`` lives in agentsensus.llm.judge, which imports JudgeRequest from
    # here: resolving it on first use keeps the import graph acyclic.
    if name == "llm":
        from .llm.judge import llm

        return llm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
