"""Equivalence judges: ``judge(requests) -> list[int | None]``.

A judge gets one `JudgeRequest` for every statement that has
candidates (nearest records at or above the store's ``min_similarity``, then
the records the lexical index ranks highest for its words), and
answers for each request, in order, the id of the candidate that states the
same fact, or ``None``. It may be a plain function or (with
``Store.adeposit`` and ``Store.adeposit_many``) a coroutine function. It never
runs while a write transaction is held, so it may take as long as an LLM takes.

A call of ``deposit_many`` may carry the requests of several items (each
request names its owner and statement): the batch is judged in passes, and a
verdict must depend on its request alone (``judge_per_item=True`` asks one
item per call). Candidates staged earlier in the same batch carry negative
provisional ids; answer with them like any other id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ._store.normalize import normalize_text
from .records import JudgeRequest

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .llm.judge import llm

__all__ = ["JudgeRequest", "Judge", "exact", "threshold", "never", "llm"]


Judge = Callable[[list[JudgeRequest]], Sequence[Optional[int]]]


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


def __getattr__(name: str) -> Any:
    # ``llm`` lives in agentsensus.llm.judge, which imports JudgeRequest from
    # here: resolving it on first use keeps the import graph acyclic.
    if name == "llm":
        from .llm.judge import llm

        return llm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
