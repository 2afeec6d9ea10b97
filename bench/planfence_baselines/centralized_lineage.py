"""Centralized lineage: every agent writes into one shared store, and the
check reads heads straight from it. Correct, but it needs that shared
service; Planfence needs none."""

from __future__ import annotations

import os
from typing import Callable, Iterable, Mapping, Optional

from agentsensus import Store

from .executor import Executor, Outcome
from .planfence_executor import guarded_act

__all__ = ["CentralizedLineage"]


class CentralizedLineage(Executor):
    """All lineage in one store at ``root``."""

    name = "centralized lineage"

    def __init__(self, root: str) -> None:
        os.makedirs(root, exist_ok=True)
        self.store = Store(os.path.join(root, "central"), dim=1)
        self.fence = self.store.fence

    def publish(self, owner: str, key: str, value: bytes) -> int:
        return self.fence.publish(key, owner, value)

    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        v = self.fence.head(key)
        return v, self.fence.value(key, v)

    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        return self.fence.derive(key, owner, value, inputs)

    def head(self, key: str) -> int:
        return self.fence.head(key)

    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        return guarded_act(self.fence, plan, scope, replan, heads=None)

    def close(self) -> None:
        self.store.close()
