"""Per-update synchronization: every update is pushed to every holder, so
each agent's replica is current and the actor compares the plan's recorded
inputs with its replica. Correct, at the price of traffic. This executor
decides correctness only (no time); the protocol timed on the emulated
links, with acknowledgements, is :mod:`.acknowledged_sync`."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from .executor import Executor, Outcome

__all__ = ["PerUpdateSync"]


class PerUpdateSync(Executor):
    """``agents`` each hold a replica of every key; ``pushes`` counts the
    messages and ``pushed_bytes`` their payloads."""

    name = "per-update sync"

    def __init__(self, agents: Iterable[str]) -> None:
        self.agents = list(agents)
        self.replicas: dict[str, dict[str, tuple[int, bytes]]] = {a: {} for a in self.agents}
        self.links: dict[tuple[str, int], dict[str, int]] = {}  # (plan, version) -> inputs
        self.pushes = 0
        self.pushed_bytes = 0

    def _write(self, owner: str, key: str, value: bytes) -> int:
        v = self.replicas[owner].get(key, (0, b""))[0] + 1
        for a in self.agents:  # push to every holder
            self.replicas[a][key] = (v, value)
            if a != owner:
                self.pushes += 1
                self.pushed_bytes += len(value) + len(key.encode()) + 8
        return v

    def publish(self, owner: str, key: str, value: bytes) -> int:
        return self._write(owner, key, value)

    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        return self.replicas[reader][key]

    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        v = self._write(owner, key, value)
        self.links[(key, v)] = dict(inputs)
        return v

    def head(self, key: str) -> int:
        return self.replicas[self.agents[0]][key][0]

    def _stale(self, actor: str, plan: str, scope: Optional[set[str]]) -> list[str]:
        out: list[str] = []
        todo = [(plan, self.replicas[actor][plan][0], scope is None or plan in scope)]
        seen: set[tuple[str, int]] = set()
        while todo:
            key, ver, under = todo.pop()
            for k, v in self.links.get((key, ver), {}).items():
                inside = under or (scope is not None and k in scope)
                if inside and self.replicas[actor][k][0] != v:
                    out.append(k)
                if (k, v) not in seen and (k, v) in self.links:
                    seen.add((k, v))
                    todo.append((k, v, inside))
        return out

    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        sc = None if scope is None else set(scope)
        if not self._stale(actor, plan, sc):
            return Outcome(True, self.replicas[actor][plan][0], detected=False)
        replan()
        if self._stale(actor, plan, sc):
            return Outcome(False, None, detected=True, replanned=True, reason="still stale after one replan")
        return Outcome(True, self.replicas[actor][plan][0], detected=True, replanned=True)
