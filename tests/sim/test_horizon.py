"""The horizon: a longer run makes the same early entries, and they gain
owners only through later deposits of the agents' own actions.

Entries of rounds 1 to 10 are the same in a 10- and a 40-round run (a run
does not know its horizon). Any owner such an entry gained after round 10
deposited into it through an action of its own in a later round (a reader of
the thread, an observer, a speaker who said the same thing): never by being
in the room.
"""

from __future__ import annotations

import pytest
from agentsensus.sim.consensus import ConsensusBackend


@pytest.mark.slow
def test_early_entries_gain_owners_only_through_later_deposits(tmp_path, tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    runs = {}
    for rounds in (10, 40):
        backend = ConsensusBackend(tmp_path / f"r{rounds}", embed.dim)
        kernel = run_kernel(tiny_play, backend, embed, rounds=rounds)
        g = backend.graph()
        runs[rounds] = (kernel, {rid: o for rid, o in g.owners.items() if 1 <= g.rounds[rid] <= 10})
        backend.close()
    (_, early10), (k40, early40) = runs[10], runs[40]
    assert set(early10) == set(early40) and early10  # the same entries: a run does not know its horizon
    assert all(early10[r] <= early40[r] for r in early10)
    later = {}
    for log in k40.logs:
        if log.round > 10:
            for d in log.acted:
                for rid in d.deposited:
                    later.setdefault(rid, set()).add(d.agent)
    for r in early10:
        assert early40[r] - early10[r] <= later.get(r, set()), r
