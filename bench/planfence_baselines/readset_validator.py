"""A commit-time read-set validator in the style of S-Bus (Khan, 2026,
arXiv 2605.17076): a shared-state server logs every read it delivers to
each agent (its DeliveryLog) and, when the agent commits, refuses the commit
(HTTP 409 there) if any version in that read set is no longer current.

It sees only what the committing agent itself read. In a handoff the actor
read the plan, and perhaps the latest requirement, but not the inputs the
planner used, so a plan derived from an old requirement commits cleanly.
Given the inherited input versions (``inherit=True``: the plan's recorded
inputs join the actor's read set) it detects the conflict."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional

from .executor import Executor, Outcome

__all__ = ["ReadSetValidator"]


class ReadSetValidator(Executor):
    """Versioned shared state with per-agent delivery logs."""

    def __init__(self, inherit: bool) -> None:
        self.inherit = inherit
        self.name = "read-set validator" + (" + inherited versions" if inherit else "")
        self.state: dict[str, tuple[int, bytes]] = {}
        self.delivery_log: dict[str, dict[str, int]] = {}  # agent -> key -> version delivered
        self.inputs_of: dict[tuple[str, int], dict[str, int]] = {}
        self.conflicts = 0

    def _write(self, key: str, value: bytes) -> int:
        v = self.state.get(key, (0, b""))[0] + 1
        self.state[key] = (v, value)
        return v

    def publish(self, owner: str, key: str, value: bytes) -> int:
        return self._write(key, value)

    def read(self, reader: str, key: str) -> tuple[int, bytes]:
        v, value = self.state[key]
        self.delivery_log.setdefault(reader, {})[key] = v
        return v, value

    def derive(self, owner: str, key: str, value: bytes, inputs: Mapping[str, int]) -> int:
        v = self._write(key, value)
        self.inputs_of[(key, v)] = dict(inputs)
        return v

    def head(self, key: str) -> int:
        return self.state[key][0]

    def _commit(self, actor: str, plan_version: int, plan: str) -> bool:
        # (key, version) pairs: an inherited version is checked even where the
        # actor itself read a newer one of the same key.
        read_set = set(self.delivery_log.get(actor, {}).items())
        if self.inherit:  # the plan's whole version vector, through sub-plans
            todo = [(plan, plan_version)]
            while todo:
                for k, v in self.inputs_of.get(todo.pop(), {}).items():
                    if (k, v) not in read_set:
                        read_set.add((k, v))
                        todo.append((k, v))
        ok = all(self.state[k][0] == v for k, v in read_set)
        if not ok:
            self.conflicts += 1
        return ok

    def act(self, actor: str, plan: str, scope: Optional[Iterable[str]], replan: Callable[[], None]) -> Outcome:
        v = self.read(actor, plan)[0]
        if self._commit(actor, v, plan):
            return Outcome(True, v, detected=False)
        # 409: the actor re-reads and retries once after the plan is redone.
        replan()
        self.delivery_log[actor] = {}
        v = self.read(actor, plan)[0]
        if self._commit(actor, v, plan):
            return Outcome(True, v, detected=True, replanned=True)
        return Outcome(False, None, detected=True, replanned=True, reason="conflict after retry")
