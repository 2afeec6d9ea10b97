"""The simulation's judge, knowing the world's state facts (`world_facts`).

A statement of a new state supersedes the newest candidate that states an
older state of the same subject (``Supersedes(id)``), known from the
`FactBook` (what the world's events said), never from the words. Every
other statement goes to the wrapped judge with the state records out of its
candidates, so an account never merges into a state.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from .world_facts import FactBook, State

__all__ = ["FactJudge"]


class FactJudge:
    """A judge that knows state facts from the `FactBook`, around ``inner`` for everything else."""

    def __init__(self, inner: Any, book: FactBook) -> None:
        self.inner, self.book = inner, book

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return str(getattr(self.inner, "name", type(self.inner).__name__))

    def _supersedes(self, state: State, candidates: Sequence[Any]) -> Any:
        """``Supersedes`` of the newest candidate stating an older state of the same subject, or ``None``."""
        from agentsensus import Supersedes  # the engine's verdict type, imported with the store

        older = [c for c in candidates if (s := self.book.state_of(c.text)) is not None and s.subject == state.subject]
        if not older:
            self.book.unlinked += 1
            return None
        self.book.linked += 1
        return Supersedes(max(int(c.id) for c in older))

    def __call__(self, requests: Sequence[Any]) -> list[Any]:
        verdicts: list[Any] = [None] * len(requests)
        rest: list[int] = []
        for i, r in enumerate(requests):
            state = self.book.state_of(r.statement)
            if state is not None:
                verdicts[i] = self._supersedes(state, r.candidates)
            else:
                rest.append(i)
        if rest:
            asked = [
                dataclasses.replace(
                    requests[i],
                    candidates=[c for c in requests[i].candidates if self.book.state_of(c.text) is None],
                )
                for i in rest
            ]
            for i, v in zip(rest, self.inner(asked)):
                verdicts[i] = v
        return verdicts
