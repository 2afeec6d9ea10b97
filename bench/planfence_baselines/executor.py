"""The interface every executor of the Planfence experiments implements.

A workflow drives an executor through the same calls whatever it is: owners
``publish`` base inputs, agents ``read`` what others own, a planner
``derive``s plans from the versions it read, and an actor ``act``s on a plan
it inherited, with a ``replan`` callback it may call once. What differs is
how (and whether) ``act`` finds out that the plan is stale.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional

__all__ = ["Executor", "Outcome"]


@dataclass
class Outcome:
    """What one protected action did. ``plan_version`` is the version of the
    plan it acted on (``None`` when blocked)."""

    acted: bool
    plan_version: Optional[int]
    detected: bool
    replanned: bool = False
    bytes: int = 0
    reason: str = ""


class Executor(ABC):
    """One way of deciding whether an inherited plan may be acted on."""

    name: str = "executor"

    @abstractmethod
    def publish(self, owner: str, key: str, value: bytes) -> int:
        """``owner`` writes a new version of base input ``key``."""

    @abstractmethod
    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        """``reader`` obtains the current version and value of ``key``."""

    @abstractmethod
    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        """``owner`` writes a new version of plan ``key`` from the exact
        ``inputs`` versions it read."""

    @abstractmethod
    def head(self, key: str) -> int:
        """The latest version of ``key`` in shared memory."""

    @abstractmethod
    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        """Before ``actor`` acts on ``plan``: decide, replanning at most once."""

    def close(self) -> None:
        """Releases stores and connections."""
        return None  # a default, not abstract: most executors hold nothing to release
