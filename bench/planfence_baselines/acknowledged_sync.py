"""Per-update synchronization with acknowledgements, timed on the emulated
links: the protocol the Planfence paper compares against.

Each update's value is pushed to every holder of a plan that depends on the
updated key; each holder applies it to its replica and acknowledges. The
update is synced when the writer has every acknowledgement. A writer has at
most one update in flight: its next update waits until the previous one is
synced (so a busy writer's updates queue behind each other, on its own
uplink). An action that needs the synced state waits until every update it
depends on, issued before the action, is synced.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Optional

from .emulated_link import EmulatedNetwork, Message, Segment

__all__ = ["AcknowledgedSync", "SyncUpdate", "ACK_BYTES"]

#: An acknowledgement's payload: the key's id and the version applied.
ACK_BYTES = 16


@dataclass
class SyncUpdate:
    """One update. ``started``: when its pushes left the writer (after the
    writer's previous update was synced); ``synced_at``: when its last
    acknowledgement arrived. ``segments`` cover ``issued`` to ``synced_at``
    along the slowest holder's push and acknowledgement."""

    writer: str
    key: str
    version: int
    nbytes: int
    issued: float
    started: Optional[float] = None
    synced_at: Optional[float] = None
    segments: list[Segment] = field(default_factory=list)


class AcknowledgedSync:
    """The protocol over ``net``. ``holders(key)``: the agents holding a plan
    that depends on ``key`` (the writer is skipped). ``replica[agent][key]``
    is the version each agent has applied."""

    def __init__(self, net: EmulatedNetwork, holders: Callable[[str], list[str]]) -> None:
        self.net = net
        self.holders = holders
        self.replica: dict[str, dict[str, int]] = {a: {} for a in net.up}
        self._queued: dict[str, deque[SyncUpdate]] = {a: deque() for a in net.up}
        self._busy: dict[str, bool] = {a: False for a in net.up}
        self.pushes = 0

    def issue(self, t: float, writer: str, key: str, nbytes: int) -> SyncUpdate:
        """``writer`` writes a new version of ``key`` (a ``nbytes`` payload) at ``t``."""
        u = SyncUpdate(writer, key, 0, nbytes, t)

        def arrives() -> None:
            u.version = self.replica[writer].get(key, 0) + 1
            self.replica[writer][key] = u.version
            self._queued[writer].append(u)
            if not self._busy[writer]:
                self._start_next(writer)

        self.net.at(t, arrives)
        return u

    def _start_next(self, writer: str) -> None:
        if not self._queued[writer]:
            self._busy[writer] = False
            return
        self._busy[writer] = True
        u = self._queued[writer].popleft()
        u.started = self.net.now
        targets = [h for h in self.holders(u.key) if h != u.writer]
        if not targets:
            self._synced(u, None)
            return
        waiting = set(targets)

        def pushed(m: Message) -> None:
            h = m.dst
            self.replica[h][u.key] = max(self.replica[h].get(u.key, 0), u.version)
            self.net.send(self.net.now, h, u.writer, ACK_BYTES, on_arrive=acked, after=m)

        def acked(m: Message) -> None:
            waiting.discard(m.src)
            if not waiting:  # the last acknowledgement: its path is the slowest
                self._synced(u, m)

        for h in targets:
            self.pushes += 1
            self.net.send(self.net.now, u.writer, h, u.nbytes, on_arrive=pushed)

    def _synced(self, u: SyncUpdate, last: Optional[Message]) -> None:
        u.synced_at = self.net.now
        assert u.started is not None
        u.segments = [("queue", u.issued, u.started)] + (last.segments if last is not None else [])
        self._start_next(u.writer)
