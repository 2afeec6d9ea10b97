"""Protected actions timed on the emulated links, with each action's stall
broken down: Planfence (real stores, real checks, the heads and values
crossing the links) and acknowledged per-update synchronization, on the same
world, update trace and link parameters.

A stall runs from the moment the actor decides to act until it may. It is
cut into five parts along its critical path, so the parts sum to the stall:

- ``link``: waiting for other agents' synchronization messages on the wire
  (per-update sync only: the pushes and acknowledgements the action needs);
- ``head``: the head queries and their answers on the wire (Planfence's
  check, and its re-check after a replan);
- ``refresh``: fetching the values of changed inputs, on the wire;
- ``replan``: storing the new plan in the plan memory, acknowledged;
- ``queue``: any of those messages waiting behind other messages in a link
  queue, and a writer's update waiting behind its previous update's sync.

Compute (the engine's check, the replan's derive) takes no virtual time: it
is microseconds against links of tens of milliseconds.
"""

from __future__ import annotations

import math
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Mapping, TypeVar

from agentsensus import StalePlanError

from .acknowledged_sync import ACK_BYTES, AcknowledgedSync, SyncUpdate
from .emulated_link import EmulatedNetwork, Message, Segment, clip
from .planfence_executor import PlanfenceExecutor

__all__ = ["PARTS", "World", "ActionStall", "run_planfence", "run_sync"]

T = TypeVar("T")

PARTS = {
    "link": "link waiting",
    "head": "head queries",
    "refresh": "refresh of changed inputs",
    "replan": "replan",
    "queue": "queueing behind other traffic",
}


@dataclass(frozen=True)
class World:
    """Who owns which key, the actor's plan and who holds plans.
    ``holders``: the agents holding a plan that depends on each base key
    (every update is pushed to them under per-update sync)."""

    agents: list[str]
    owner: Mapping[str, str]  # base key -> owner
    plan_inputs: list[str]
    holders: list[str]
    actor: str
    planner: str
    value_bytes: int
    plan_bytes: int = 1024
    plan: str = "plan"


@dataclass
class ActionStall:
    """One action: its stall (seconds), the parts of it, and what it did."""

    stall: float
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    replanned: bool = False
    blocked: bool = False

    def charge(self, segments: list[Segment], label: str, start: float) -> None:
        """Adds the part of ``segments`` after ``start``: waiting in a queue
        is queueing, the rest is ``label``."""
        for kind, a, b in clip(segments, start):
            self.parts["queue" if kind == "queue" else label] += b - a

    def check_sum(self) -> None:
        # The parts partition the stall: each phase starts where the last ended.
        assert abs(sum(self.parts.values()) - self.stall) < 1e-9, (self.parts, self.stall)


def _check_times(updates: list[tuple[float, str]], actions: list[float]) -> None:
    if [t for t, _ in updates] != sorted(t for t, _ in updates) or actions != sorted(actions):
        raise ValueError("updates and actions must be in time order")


class _Owners:
    """Runs what owners do (write, answer, serve values) on a thread of their
    own, as their own processes would: a guard stages the replan's writes
    per thread, and an owner's write is no part of the actor's replan."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="owners")

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        return self._pool.submit(fn, *args).result()

    def close(self) -> None:
        self._pool.shutdown()


class _TimedHeads:
    """The actor's head queries over the links: they leave at ``clock``;
    each owner answers from its own store when the query reaches it; the
    check goes on when the last answer is in. ``rounds`` keeps each round's
    last answer (its segments are the round's critical path)."""

    def __init__(self, ex: PlanfenceExecutor, net: EmulatedNetwork, actor: str, owners: "_Owners") -> None:
        self.ex, self.net, self.actor, self.owners = ex, net, actor, owners
        self.clock = 0.0
        self.rounds: list[Message] = []

    def ask_encoded(self, queries: Mapping[str, bytes]) -> dict[str, Any]:
        replies: dict[str, Any] = {}
        arrived: list[Message] = []
        if not queries:
            return replies

        def answer(m: Message, owner: str, q: bytes) -> None:
            replies[owner] = a = self.owners.run(self.ex.stores[owner].fence.answer, owner, q)
            self.net.send(self.net.now, owner, self.actor, len(a), on_arrive=arrived.append, after=m)

        for owner, q in queries.items():
            self.net.send(self.clock, self.actor, owner, len(q), on_arrive=partial(answer, owner=owner, q=q))
        self.net.run_until(lambda: len(arrived) == len(queries))
        last = max(arrived, key=lambda m: m.arrive or 0.0)
        self.clock = last.arrive or self.clock
        self.rounds.append(last)
        return replies


def _fetch(
    net: EmulatedNetwork, ex: PlanfenceExecutor, w: World, owners: _Owners, t: float, groups: list[list[str]]
) -> tuple[Message, dict[str, int]]:
    """Fetches the values of each group of keys (one request per group, all
    sent at ``t``), each read at its owner's head when the request arrives;
    the plan memory observes each version as its reply arrives. Returns the
    last reply and the versions read."""
    got: dict[str, int] = {}
    arrived: list[Message] = []

    def owner_read(keys: list[str]) -> list[tuple[str, int, bytes]]:
        f = ex.stores[w.owner[keys[0]]].fence
        return [(k, v, f.value(k, v)) for k in keys for v in (f.head(k),)]

    def serve(m: Message, keys: list[str]) -> None:
        values = owners.run(owner_read, keys)
        net.send(
            net.now,
            w.owner[keys[0]],
            w.actor,
            sum(len(v) + 8 for _, _, v in values),
            on_arrive=lambda r: received(r, values),
            after=m,
        )

    def received(r: Message, values: list[tuple[str, int, bytes]]) -> None:
        for k, v, value in values:
            got[k] = v
            if w.owner[k] != w.planner:  # the planner's own keys are already in the plan memory
                ex.plans.observe(k, w.owner[k], v, value)
        arrived.append(r)

    for keys in groups:
        net.send(t, w.actor, w.owner[keys[0]], sum(len(k) + 8 for k in keys), on_arrive=partial(serve, keys=keys))
    net.run_until(lambda: len(arrived) == len(groups))
    return max(arrived, key=lambda m: m.arrive or 0.0), got


def _store_plan(net: EmulatedNetwork, w: World, t: float) -> list[Message]:
    """Sends the new plan to the plan memory at ``t``; the list gets its
    acknowledgement when it arrives."""
    acked: list[Message] = []
    net.send(
        t,
        w.actor,
        w.planner,
        w.plan_bytes,
        on_arrive=lambda m: net.send(net.now, w.planner, w.actor, ACK_BYTES, on_arrive=acked.append, after=m),
    )
    return acked


def run_planfence(
    root: str,
    w: World,
    net: EmulatedNetwork,
    updates: list[tuple[float, str]],
    actions: list[float],
    seed: int,
    replan: str = "changed",
) -> list[ActionStall]:
    """Planfence: owners write into their own stores at the trace's times (no
    traffic); before each action the actor checks its plan, and when an input
    moved it replans once. ``replan="changed"`` fetches only the changed
    inputs, one request per owner, and stores the plan while the re-check is
    in flight; ``replan="all"`` re-reads every input (one request each),
    then stores the plan, then re-checks."""
    if replan not in ("changed", "all"):
        raise ValueError(f"replan must be 'changed' or 'all', got {replan!r}")
    _check_times(updates, actions)
    rng = random.Random(f"{seed}:values")
    ex = PlanfenceExecutor(root, w.agents, w.planner, sync=False)  # virtual time: a flush costs nothing
    owners = _Owners()
    heads = _TimedHeads(ex, net, w.actor, owners)
    ex.heads = heads
    out: list[ActionStall] = []
    try:
        for k, o in w.owner.items():
            ex.publish(o, k, rng.randbytes(w.value_bytes))
        ex.derive(w.planner, w.plan, b"plan", {k: ex.read(w.planner, k)[0] for k in w.plan_inputs})

        def publish(key: str) -> None:
            owners.run(ex.publish, w.owner[key], key, rng.randbytes(w.value_bytes))

        for t, k in updates:  # owners write locally: nothing crosses a link
            net.at(t, partial(publish, k))
        for t0 in actions:
            if net.now > t0:  # the stall is measured from t0: the actor must be free by then
                raise ValueError(f"the action at {t0:g} s starts before the one before it ended ({net.now:g} s)")
            net.run_to(t0)
            a = ActionStall(0.0)
            heads.clock, heads.rounds = t0, []
            phase: dict[str, Any] = {}

            def do_replan(check: Any) -> None:
                a.replanned = True
                t1 = heads.clock
                if replan == "changed":
                    by_owner: dict[str, list[str]] = {}
                    for s in check.stale:
                        by_owner.setdefault(s.owner, []).append(s.key)
                    groups = list(by_owner.values())
                else:
                    groups = [[k] for k in w.plan_inputs]
                last, got = _fetch(net, ex, w, owners, t1, groups)
                phase["refresh"] = (last, t1)
                t2 = last.arrive or t1
                links = {ln.key: ln.version for ln in ex.plans.frontier(w.plan)}
                links.update(got)
                ex.derive(w.planner, w.plan, b"plan", links)
                acked = _store_plan(net, w, t2)
                phase["store"] = (acked, t2)
                if replan == "all":  # the re-check waits for the plan memory's acknowledgement
                    net.run_until(lambda: bool(acked))
                    heads.clock = acked[0].arrive or t2
                else:
                    heads.clock = t2

            try:
                ex.plans.guard(w.plan, replan=do_replan, heads=heads)
            except StalePlanError as e:
                if e.__cause__ is not None:  # the replan itself failed: a bug here, not a stale plan
                    raise
                a.blocked = True
            a.charge(heads.rounds[0].segments, "head", t0)
            end = heads.clock
            if a.replanned:
                last, t1 = phase["refresh"]
                a.charge(last.segments, "refresh", t1)
                acked, t2 = phase["store"]
                net.run_until(lambda: bool(acked))
                store_end = acked[0].arrive
                recheck = heads.rounds[1]
                if replan == "all":
                    a.charge(acked[0].segments, "replan", t2)
                    a.charge(recheck.segments, "head", store_end)
                elif recheck.arrive >= store_end:  # in parallel: the later one is on the path
                    a.charge(recheck.segments, "head", t2)
                else:
                    a.charge(acked[0].segments, "replan", t2)
                end = max(end, store_end)
            a.stall = end - t0
            a.check_sum()
            out.append(a)
    finally:
        owners.close()
        ex.close()
    return out


def run_sync(
    w: World, net: EmulatedNetwork, updates: list[tuple[float, str]], actions: list[float]
) -> list[ActionStall]:
    """Acknowledged per-update synchronization: every update is pushed to the
    holders of the plans that depend on it; before each action the actor
    waits until every update of its plan's inputs issued before the action is
    synced, then replans if its replica moved past the plan's links (storing
    the plan in the plan memory, acknowledged, through the same protocol).
    The actor knows for free which updates are in flight (a real one would
    have to learn it from the writers): that favours per-update sync."""
    _check_times(updates, actions)
    plan_key = w.plan

    def holders(key: str) -> list[str]:
        return [w.planner] if key == plan_key else w.holders

    sync = AcknowledgedSync(net, holders)
    for k in w.owner:  # the first versions are everywhere before the run
        for h in w.agents:
            sync.replica[h][k] = 1
    links = {k: 1 for k in w.plan_inputs}
    inputs = set(w.plan_inputs)
    mine: list[SyncUpdate] = []
    for t, k in updates:
        u = sync.issue(t, w.owner[k], k, w.value_bytes + len(k) + 8)
        if k in inputs:
            mine.append(u)
    out: list[ActionStall] = []
    done = 0  # updates before this index are synced and issued before the last action
    for t0 in actions:
        net.run_to(t0)
        a = ActionStall(0.0)
        # An action may start while the one before still waits (a stall can
        # outlast the gap between actions); it waits for its own updates only.
        while done < len(mine) and mine[done].issued <= t0 and (mine[done].synced_at or math.inf) <= t0:
            done += 1
        pending = [u for u in mine[done:] if u.issued <= t0]
        net.run_until(lambda: all(u.synced_at is not None for u in pending))
        t1 = t0
        if pending:
            last = max(pending, key=lambda u: u.synced_at or 0.0)
            t1 = max(t0, last.synced_at or t0)
            a.charge(last.segments, "link", t0)
        replica = sync.replica[w.actor]
        if any(replica[k] != links[k] for k in w.plan_inputs):
            a.replanned = True
            links = {k: replica[k] for k in w.plan_inputs}
            u = sync.issue(t1, w.actor, plan_key, w.plan_bytes)
            net.run_until(lambda: u.synced_at is not None)
            a.charge(u.segments, "replan", t1)
            t1 = u.synced_at or t1
        a.stall = t1 - t0
        a.check_sum()
        out.append(a)
    return out
