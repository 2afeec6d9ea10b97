"""Freshness-only: act if my copy of the plan is the latest plan. It never
looks at what the plan was derived from, so a revised input goes unseen."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from .executor import Executor, Outcome

__all__ = ["FreshnessOnly"]


class FreshnessOnly(Executor):
    """Shared memory of versioned values; the check compares plan versions."""

    name = "freshness-only"

    def __init__(self) -> None:
        self._data: dict[str, tuple[int, bytes]] = {}
        self._held: dict[tuple[str, str], int] = {}  # (agent, key) -> version it holds

    def _write(self, key: str, value: bytes) -> int:
        v = self._data.get(key, (0, b""))[0] + 1
        self._data[key] = (v, value)
        return v

    def publish(self, owner: str, key: str, value: bytes) -> int:
        return self._write(key, value)

    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        v, value = self._data[key]
        self._held[(reader, key)] = v
        return v, value

    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        return self._write(key, value)

    def head(self, key: str) -> int:
        return self._data[key][0]

    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        held = self.read(actor, plan)[0]  # the inherited copy
        latest = self._data[plan][0]
        # 8 bytes of version each way, plus the key: what asking "latest?" costs.
        size = 2 * 8 + len(plan.encode())
        if held == latest:
            return Outcome(True, held, detected=False, bytes=size)
        replan()
        return Outcome(True, self._data[plan][0], detected=True, replanned=True, bytes=size)
