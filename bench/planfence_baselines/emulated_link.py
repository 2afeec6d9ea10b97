"""Emulated LTE links in user space (this kernel has no netem), as a
discrete-event simulation in virtual time (seconds).

Each agent has an uplink and a downlink, each a FIFO queue with a rate: a
message waits for the messages before it, then takes size/rate to send.
Between the two, a one-way delay drawn per message from a seeded
distribution. Every executor runs on identical parameters and seeds.

The stated distribution (LTE, from published drive-test summaries: 20-40 ms
one-way user-plane latency with a long jitter tail, a few Mbit/s up):
one-way delay = 25 ms + Gamma(shape 2, scale 8 ms) (mean 41 ms), uplink
2 Mbit/s, downlink 10 Mbit/s, 120 bytes of framing per message (TCP/IP and
HTTP headers, counted for timing, never in Check.bytes).

Events run in time order (a heap), so every queue sees its messages in the
order they reach it, whoever sent them. Each message keeps the segments of
its way (``queue``: waiting behind other messages; ``wire``: its own
transmission and propagation), from which a stall is broken down.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Callable, Optional

__all__ = ["LteProfile", "EmulatedNetwork", "Message", "Segment", "clip"]

#: (kind, start, end): kind is "queue" (behind other messages) or "wire".
Segment = tuple[str, float, float]


@dataclass(frozen=True)
class LteProfile:
    """Parameters of the emulated links."""

    base_ms: float = 25.0
    jitter_shape: float = 2.0
    jitter_scale_ms: float = 8.0
    uplink_bps: float = 2e6
    downlink_bps: float = 10e6
    framing_bytes: int = 120


@dataclass
class Message:
    """One message in flight. ``arrive`` is set when it is delivered;
    ``segments`` start where the message it answers (``after``) ended, so a
    reply's segments hold the whole round trip."""

    src: str
    dst: str
    nbytes: int
    sent: float
    segments: list[Segment] = field(default_factory=list)
    arrive: Optional[float] = None


class _Queue:
    def __init__(self, bps: float) -> None:
        self.bps = bps
        self.free_at = 0.0  # when the link is next idle

    def take(self, t: float, nbytes: int) -> tuple[float, float]:
        """(start, end) of sending ``nbytes`` that reach the queue at ``t``."""
        start = max(t, self.free_at)
        self.free_at = start + nbytes * 8 / self.bps
        return start, self.free_at


class EmulatedNetwork:
    """Agents joined through a core by emulated LTE links. ``now`` is the
    virtual time of the event being run."""

    def __init__(self, agents: list[str], profile: LteProfile = LteProfile(), seed: int = 0) -> None:
        self.profile = profile
        self.up = {a: _Queue(profile.uplink_bps) for a in agents}
        self.down = {a: _Queue(profile.downlink_bps) for a in agents}
        # One delay stream per directed pair, so what one pair sends never
        # shifts another pair's draws.
        self._rng = {(a, b): random.Random(f"{seed}:{a}->{b}") for a in agents for b in agents if a != b}
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()

    def delay(self, src: str, dst: str) -> float:
        """The seeded one-way propagation delay from ``src`` to ``dst``, in seconds."""
        p = self.profile
        if p.jitter_scale_ms == 0:  # a fixed delay (tests with known timings)
            return p.base_ms / 1000.0
        return (p.base_ms + self._rng[(src, dst)].gammavariate(p.jitter_shape, p.jitter_scale_ms)) / 1000.0

    # -- events ---------------------------------------------------------------

    def at(self, t: float, fn: Callable[[], object]) -> None:
        """Runs ``fn`` at virtual time ``t`` (not before the current event)."""
        heapq.heappush(self._events, (max(t, self.now), next(self._seq), fn))

    def run_until(self, done: Callable[[], bool]) -> None:
        """Runs events in time order until ``done()``; an empty schedule
        before that is a bug in the caller (it waits for nothing)."""
        while not done():
            if not self._events:
                raise RuntimeError("emulated network: waiting for an event that was never scheduled")
            self._step()

    def run_to(self, t: float) -> None:
        """Runs every event due at or before ``t``; ``now`` becomes ``t``."""
        while self._events and self._events[0][0] <= t:
            self._step()
        self.now = max(self.now, t)

    def _step(self) -> None:
        t, _, fn = heapq.heappop(self._events)
        self.now = t
        fn()

    # -- messages -------------------------------------------------------------

    def send(
        self,
        t: float,
        src: str,
        dst: str,
        payload_bytes: int,
        on_arrive: Optional[Callable[[Message], object]] = None,
        after: Optional[Message] = None,
    ) -> Message:
        """Sends ``payload_bytes`` (plus framing) from ``src`` at ``t``. The
        message enters the uplink at ``t``, the core forwards it after the
        propagation delay, and it leaves ``dst``'s downlink at ``arrive``;
        then ``on_arrive(message)`` runs."""
        n = payload_bytes + self.profile.framing_bytes
        m = Message(src, dst, n, t, list(after.segments) if after is not None else [])
        if after is not None and after.arrive is not None and after.arrive < t:
            m.segments.append(("queue", after.arrive, t))  # held by the receiver before replying

        def uplink() -> None:
            start, left = self.up[src].take(self.now, n)
            m.segments += [("queue", self.now, start), ("wire", start, left + self.delay(src, dst))]
            self.at(m.segments[-1][2], downlink)

        def downlink() -> None:
            start, end = self.down[dst].take(self.now, n)
            m.segments += [("queue", self.now, start), ("wire", start, end)]
            self.at(end, delivered)

        def delivered() -> None:
            m.arrive = self.now
            if on_arrive is not None:
                on_arrive(m)

        self.at(t, uplink)
        return m


def clip(segments: list[Segment], start: float) -> list[Segment]:
    """The part of ``segments`` after ``start`` (what a stall that began
    at ``start`` spent on each)."""
    return [(k, max(a, start), b) for k, a, b in segments if b > start and b > a]
