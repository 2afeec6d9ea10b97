"""Planfence as an executor: every agent keeps its own store; plans live in
the planner's store (the shared plan memory) with exact links to the input
versions they used; before acting, the actor asks each input's owner for its
heads and replans once before blocking."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping, Optional

from agentsensus import Check, Fence, StalePlanError, Store

from .executor import Executor, Outcome

__all__ = ["PlanfenceExecutor", "LocalOwners", "guarded_act"]


class LocalOwners:
    """Heads answered by each owner's own store, through the binary encoding
    (what a heads server would do, without the network)."""

    def __init__(self, stores: Mapping[str, Store]) -> None:
        self.stores = stores

    def ask_encoded(self, queries: Mapping[str, bytes]) -> dict[str, Any]:
        """Answers each owner's encoded head query from that owner's store."""
        out: dict[str, Any] = {}
        for owner, q in queries.items():
            store = self.stores.get(owner)
            out[owner] = (
                store.fence.answer(owner, q) if store is not None else KeyError(f"no store for owner {owner!r}")
            )
        return out


def guarded_act(
    fence: Fence, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None], heads: Any
) -> Outcome:
    """``Fence.guard`` as an executor's ``act``: counts both checks' bytes."""
    seen: list[Check] = []

    def rp(c: Check) -> None:
        seen.append(c)
        replan()

    try:
        c = fence.guard(plan, scope=scope, replan=rp, heads=heads)
    except StalePlanError as e:
        spent = e.check.bytes + sum(x.bytes for x in seen if x is not e.check)
        return Outcome(False, None, detected=True, replanned=bool(seen), bytes=spent, reason=str(e))
    spent = c.bytes + sum(x.bytes for x in seen)
    return Outcome(True, fence.head(plan), detected=bool(seen), replanned=bool(seen), bytes=spent)


class PlanfenceExecutor(Executor):
    """One store per agent under ``root``; ``planner`` keeps the plans.
    ``heads``: how owners are asked (default: their stores, in process; a
    heads client of :mod:`agentsensus.planfence.transport` for other processes).
    ``sync=False`` opens the stores without a flush per commit (for runs
    timed in virtual time, where durability costs nothing)."""

    name = "Planfence"

    def __init__(self, root: str, agents: Iterable[str], planner: str, heads: Any = None, sync: bool = True) -> None:
        os.makedirs(root, exist_ok=True)
        self.stores = {a: Store(os.path.join(root, a), dim=1, sync=sync) for a in agents}
        if planner not in self.stores:
            raise ValueError(f"planner {planner!r} is not one of the agents")
        self.planner = planner
        self.plans = self.stores[planner].fence
        self.owner_of: dict[str, str] = {}
        self.heads = heads if heads is not None else LocalOwners(self.stores)

    def publish(self, owner: str, key: str, value: bytes) -> int:
        self.owner_of[key] = owner
        return self.stores[owner].fence.publish(key, owner, value)

    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        owner = self.owner_of[key]
        src = self.stores[owner].fence
        v = src.head(key)
        value = src.value(key, v)
        if owner != self.planner:  # the plan memory records what plans may link to
            self.plans.observe(key, owner, v, value)
        return v, value

    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        self.owner_of[key] = owner
        return self.plans.derive(key, owner, value, inputs)

    def head(self, key: str) -> int:
        return self.stores[self.owner_of[key]].fence.head(key)

    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        return guarded_act(self.plans, plan, scope, replan, self.heads)

    def close(self) -> None:
        for s in self.stores.values():
            s.close()
