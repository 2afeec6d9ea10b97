"""Why sharing grows with the horizon: entries gain owners after the round they are made in.

An agent tells news to someone who did not see it; the listener deposits its
account of the retelling, and the judge merges it into the record of the
event. So the entries of the first rounds have more owners after 40 rounds
than after 10, in runs that agree up to round 10.
"""

from __future__ import annotations

from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.memory_policy import MemoryPolicy


def test_early_entries_gain_owners_through_retelling(tmp_path, tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    runs = {}
    for rounds in (10, 40):
        backend = ConsensusBackend(tmp_path / f"r{rounds}", embed.dim)
        # Restless agents: with the default knobs the tiny world's seven survivors soon stand in
        # one room (each goes where it last heard of company), see everything and retell nothing new.
        # Time stamps: without them a move repeated in a later round reads as the early one and merges
        # into its record, an owner gained by no retelling.
        kernel = run_kernel(
            tiny_play,
            backend,
            embed,
            rounds=rounds,
            timestamps=True,
            policy=MemoryPolicy(0, wander=0.3, restless=0.5),
        )
        g = backend.graph()
        runs[rounds] = (kernel, {rid: o for rid, o in g.owners.items() if 1 <= g.rounds[rid] <= 10})
        backend.close()
    (_, early10), (k40, early40) = runs[10], runs[40]
    assert set(early10) == set(early40) and early10  # the same entries: a run does not know its horizon
    assert all(early10[r] <= early40[r] for r in early10)
    gained = [r for r in early10 if early40[r] > early10[r]]
    assert gained
    # Every owner they gained heard them retold: a listener of a say, after round 10, that retells the entry's fact.
    led = k40.ledger
    for r in gained:
        fact = led.main_fact(r)
        heard = {
            w
            for log in k40.logs
            if log.round > 10
            for ev in log.events
            if ev.kind == "say" and led.aliases.get(ev.seq) == fact
            for w in ev.witnesses
            if w not in ev.actors
        }
        assert early40[r] - early10[r] <= heard, r
