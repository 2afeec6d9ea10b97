"""Emulated LTE links in user space (this kernel has no netem).

Each agent has an uplink and a downlink, each a FIFO queue with a rate: a
message waits for the messages before it, then takes size/rate to send.
Between the two, a one-way delay drawn per message from a seeded
distribution. Every executor runs on identical parameters and seeds.

The stated distribution (LTE, from published drive-test summaries: 20-40 ms
one-way user-plane latency with a long jitter tail, a few Mbit/s up):
one-way delay = 25 ms + Gamma(shape 2, scale 8 ms) (mean 41 ms), uplink
2 Mbit/s, downlink 10 Mbit/s, 120 bytes of framing per message (TCP/IP and
HTTP headers, counted for timing, never in Check.bytes).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["LteProfile", "EmulatedNetwork"]


@dataclass(frozen=True)
class LteProfile:
    """Parameters of the emulated links."""

    base_ms: float = 25.0
    jitter_shape: float = 2.0
    jitter_scale_ms: float = 8.0
    uplink_bps: float = 2e6
    downlink_bps: float = 10e6
    framing_bytes: int = 120


class _Queue:
    def __init__(self, bps: float) -> None:
        self.bps = bps
        self.free_at = 0.0  # seconds: when the link is next idle

    def send(self, t: float, nbytes: int) -> float:
        """When a message of ``nbytes`` sent at ``t`` has left the link (it queues behind earlier ones)."""
        start = max(t, self.free_at)
        self.free_at = start + nbytes * 8 / self.bps
        return self.free_at


class EmulatedNetwork:
    """Agents joined through a core by emulated LTE links, in virtual time
    (seconds). ``send`` returns when a message sent at ``t`` arrives."""

    def __init__(self, agents: list[str], profile: LteProfile = LteProfile(), seed: int = 0) -> None:
        self.profile = profile
        self.up = {a: _Queue(profile.uplink_bps) for a in agents}
        self.down = {a: _Queue(profile.downlink_bps) for a in agents}
        # One delay stream per directed pair, so what one pair sends never
        # shifts another pair's draws.
        self._rng = {(a, b): random.Random(f"{seed}:{a}->{b}") for a in agents for b in agents if a != b}

    def delay(self, src: str, dst: str) -> float:
        """The seeded one-way propagation delay from ``src`` to ``dst``, in seconds."""
        p = self.profile
        return (p.base_ms + self._rng[(src, dst)].gammavariate(p.jitter_shape, p.jitter_scale_ms)) / 1000.0

    def send(self, t: float, src: str, dst: str, payload_bytes: int) -> float:
        """When a message of ``payload_bytes`` (plus framing) sent at ``t`` arrives at ``dst``."""
        n = payload_bytes + self.profile.framing_bytes
        left = self.up[src].send(t, n)
        return self.down[dst].send(left + self.delay(src, dst), n)
