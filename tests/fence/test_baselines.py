"""The executors behind one interface, on one workflow with a late revision:
freshness-only acts on the stale plan; the others do not."""

from __future__ import annotations

import os

import pytest

from agentsensus.planfence_baselines import (
    CentralizedLineage,
    FreshnessOnly,
    PerUpdateSync,
    PlanfenceExecutor,
    ReadSetValidator,
)
from agentsensus.planfence_baselines.emulated_link import EmulatedNetwork, LteProfile

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


def test_emulated_links_are_seeded_and_queue_in_order():
    a = EmulatedNetwork(["x", "y"], LteProfile(), seed=3)
    b = EmulatedNetwork(["x", "y"], LteProfile(), seed=3)
    ta = [a.send(0.0, "x", "y", 10_000) for _ in range(5)]
    tb = [b.send(0.0, "x", "y", 10_000) for _ in range(5)]
    assert ta == tb
    # five 10 kB messages sent at once leave the 2 Mbit/s uplink one after another
    assert ta[-1] >= 5 * 10_120 * 8 / 2e6
