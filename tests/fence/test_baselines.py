"""The experiments' executors (bench/planfence_baselines, put on the path by
conftest.py) on the installed package: one workflow with a late revision,
where freshness-only acts on the stale plan and the others do not; the
emulated links; the acknowledged per-update sync protocol and the timed
actions, on tiny links with known delays, in exact virtual time."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planfence_baselines import (
    AcknowledgedSync,
    CentralizedLineage,
    FreshnessOnly,
    PerUpdateSync,
    PlanfenceExecutor,
    ReadSetValidator,
)
from planfence_baselines.acknowledged_sync import ACK_BYTES
from planfence_baselines.emulated_link import EmulatedNetwork, LteProfile
from planfence_baselines.timed_actions import World, run_planfence, run_sync

AGENTS = ["req", "bud", "planner", "actor"]


def run(ex):
    ex.publish("req", "requirement", b"r1")
    ex.publish("bud", "budget", b"b1")

    def plan():
        got = {k: ex.read("planner", k)[0] for k in ("requirement", "budget")}
        return ex.derive("planner", "plan", repr(got).encode(), got)

    plan()
    ex.publish("req", "requirement", b"r2")
    ex.read("actor", "requirement")
    out = ex.act("actor", "plan", None, plan)
    return out


@pytest.mark.parametrize(
    "make, correct, detected",
    [
        (lambda d: FreshnessOnly(), False, False),
        (lambda d: PlanfenceExecutor(d, AGENTS, "planner"), True, True),
        (lambda d: CentralizedLineage(d), True, True),
        (lambda d: PerUpdateSync(AGENTS), True, True),
        (lambda d: ReadSetValidator(inherit=False), False, False),
        (lambda d: ReadSetValidator(inherit=True), True, True),
    ],
)
def test_executor_on_a_late_revision(tmp_path, make, correct, detected):
    ex = make(os.fspath(tmp_path / "x"))
    try:
        out = run(ex)
        assert out.acted
        assert out.detected == detected
        assert (out.plan_version == 2) == correct  # version 2 is the plan derived from r2
    finally:
        ex.close()


# Links with round numbers: 10 ms one way, no jitter, no framing; the
# uplink sends 1 byte per ms, the downlink 10 bytes per ms.
TINY = LteProfile(base_ms=10.0, jitter_scale_ms=0.0, uplink_bps=8_000.0, downlink_bps=80_000.0, framing_bytes=0)


def test_emulated_links_are_seeded_and_queue_in_order():
    def arrivals(seed):
        net = EmulatedNetwork(["x", "y"], LteProfile(), seed=seed)
        ms = [net.send(0.0, "x", "y", 10_000) for _ in range(5)]
        net.run_until(lambda: all(m.arrive is not None for m in ms))
        return [m.arrive for m in ms]

    assert arrivals(3) == arrivals(3)
    # five 10 kB messages sent at once leave the 2 Mbit/s uplink one after another
    assert arrivals(3)[-1] >= 5 * 10_120 * 8 / 2e6


def test_a_queue_serves_messages_in_time_order_not_call_order():
    net = EmulatedNetwork(["x", "y"], TINY)
    late = net.send(0.050, "x", "y", 100)
    early = net.send(0.0, "x", "y", 100)  # sent first in time, though asked for second
    net.run_until(lambda: late.arrive is not None)
    assert early.arrive == pytest.approx(0.0 + 0.100 + 0.010 + 0.010)
    # the later message waits 50 ms behind the earlier one on the uplink
    assert late.arrive == pytest.approx(0.100 + 0.100 + 0.010 + 0.010)
    assert [k for k, a, b in late.segments if b > a] == ["queue", "wire", "wire"]


def test_waiting_for_nothing_is_an_error():
    net = EmulatedNetwork(["x", "y"], TINY)
    with pytest.raises(RuntimeError, match="never scheduled"):
        net.run_until(lambda: False)


def test_acknowledged_sync_on_known_delays():
    """Writer w pushes a 100-byte update to holders a and b. The push to a
    takes the uplink for 100 ms, then 10 ms of delay and 10 ms of downlink;
    the push to b waits behind it; each 16-byte acknowledgement takes 16 ms
    up, 10 ms across, 1.6 ms down. w's second update, issued at 50 ms, waits
    until the first is synced."""
    net = EmulatedNetwork(["w", "a", "b"], TINY)
    sync = AcknowledgedSync(net, lambda key: ["w", "a", "b"])
    u1 = sync.issue(0.0, "w", "x", 100)
    u2 = sync.issue(0.050, "w", "x", 100)
    ack = ACK_BYTES / 1000 + 0.010 + ACK_BYTES / 10_000
    net.run_to(0.121)
    assert sync.replica["a"]["x"] == 1 and "x" not in sync.replica["b"]  # a applied it at 120 ms
    net.run_until(lambda: u2.synced_at is not None)
    assert u1.started == 0.0
    assert u1.synced_at == pytest.approx(0.200 + 0.010 + 0.010 + ack)  # b's acknowledgement is the last
    assert u2.started == pytest.approx(u1.synced_at)  # the writer's next update waited
    assert u2.synced_at == pytest.approx(u2.started + 0.200 + 0.020 + ack)
    assert (u1.version, u2.version) == (1, 2)
    assert sync.replica["a"]["x"] == sync.replica["b"]["x"] == 2
    assert sync.pushes == 4
    # u2's path: 197.6 ms behind u1, then 100 ms behind its own push to a
    queued = sum(b - a for k, a, b in u2.segments if k == "queue")
    assert queued == pytest.approx((u1.synced_at - 0.050) + 0.100)
    assert u2.segments[0][1] == 0.050 and u2.segments[-1][2] == pytest.approx(u2.synced_at)


def test_an_update_nobody_else_holds_is_synced_at_once():
    net = EmulatedNetwork(["w", "a"], TINY)
    sync = AcknowledgedSync(net, lambda key: ["w"])
    u = sync.issue(0.5, "w", "x", 100)
    net.run_until(lambda: u.synced_at is not None)
    assert u.synced_at == 0.5 and sync.pushes == 0


def tiny_world(value_bytes: int = 91) -> World:
    # key "x" (owned by w) is the plan's one input; a acts, b keeps the plans.
    return World(
        agents=["w", "a", "b"],
        owner={"x": "w", "y": "b"},
        plan_inputs=["x"],
        holders=["w", "a", "b"],
        actor="a",
        planner="b",
        value_bytes=value_bytes,
        plan_bytes=50,
    )


def test_sync_action_waits_for_the_update_then_replans():
    """The update of x (91 + 1 + 8 = 100 bytes) is synced at 247.6 ms (above);
    the action at 100 ms waits for it, then stores its new plan at b: 50 ms
    up, 10 across, 5 down, and the acknowledgement back."""
    net = EmulatedNetwork(["w", "a", "b"], TINY)
    [a] = run_sync(tiny_world(), net, [(0.0, "x")], [0.100])
    ack = ACK_BYTES / 1000 + 0.010 + ACK_BYTES / 10_000
    synced = 0.200 + 0.020 + ack
    stored = synced + 0.050 + 0.010 + 0.005 + ack
    assert a.replanned and not a.blocked
    assert a.stall == pytest.approx(stored - 0.100)
    assert a.parts["link"] == pytest.approx(synced - 0.100)  # b's push and ack, on the wire
    assert a.parts["replan"] == pytest.approx(stored - synced)
    assert a.parts["queue"] == pytest.approx(0.0)  # the wait behind the push to a ended at 100 ms


def test_sync_action_with_nothing_in_flight_does_not_wait():
    net = EmulatedNetwork(["w", "a", "b"], TINY)
    first, second = run_sync(tiny_world(), net, [(0.0, "y")], [0.100, 2.0])
    assert first.stall == 0.0 and not first.replanned  # y is no input of the plan
    assert second.stall == 0.0


# Links whose only cost is the 10 ms delay: every round trip is 20 ms.
FAST = LteProfile(base_ms=10.0, jitter_scale_ms=0.0, uplink_bps=1e15, downlink_bps=1e15, framing_bytes=0)


@pytest.mark.parametrize("replan, replanning", [("changed", 0.060), ("all", 0.080)])
def test_planfence_action_round_trips(tmp_path, replan, replanning):
    """A current plan costs one round of head queries. A stale one adds the
    refresh and the re-check; "changed" stores the plan during the re-check,
    "all" before it."""
    w = tiny_world()
    got = run_planfence(
        os.fspath(tmp_path / "pf"), w, EmulatedNetwork(w.agents, FAST), [(1.5, "x")], [1.0, 2.0, 3.0], 7, replan=replan
    )
    assert [a.replanned for a in got] == [False, True, False]
    assert not any(a.blocked for a in got)
    assert [a.stall for a in got] == pytest.approx([0.020, replanning, 0.020], abs=1e-6)
    assert got[1].parts["refresh"] == pytest.approx(0.020, abs=1e-6)
    # two rounds of head queries and one plan store, the store hidden under the re-check for "changed"
    assert got[1].parts["head"] + got[1].parts["replan"] == pytest.approx(0.060 if replan == "all" else 0.040, abs=1e-6)


def test_planfence_blocks_when_an_input_moves_during_the_replan(tmp_path):
    # x moves at 1.5 s and again at 2.035 s: after the refresh read version 2
    # at w (2.030 s), before the re-check reaches w (2.050 s).
    w = tiny_world()
    got = run_planfence(
        os.fspath(tmp_path / "pf"), w, EmulatedNetwork(w.agents, FAST), [(1.5, "x"), (2.035, "x")], [2.0], 7
    )
    assert got[0].replanned and got[0].blocked


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 3.0), st.sampled_from(["x", "y"])), max_size=12), st.integers(0, 50))
def test_sync_stall_parts_sum_to_the_stall(updates, seed):
    w = tiny_world(value_bytes=2000)
    net = EmulatedNetwork(w.agents, LteProfile(), seed=seed)
    got = run_sync(w, net, sorted(updates), [0.5, 1.0, 1.5, 2.0, 3.5])
    for a in got:  # run_sync asserts the sum; the parts are never negative
        assert a.stall >= 0 and all(v >= -1e-12 for v in a.parts.values())
