"""Provenance never reaches a backend or the judge; the ledger scores the judge exactly."""

from __future__ import annotations

import numpy as np
from agentsensus import Memory
from agentsensus.sim.account_judge import AccountJudge
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.provenance import Ledger


class SpyBackend(CollaborativeBackend):
    """Records every argument ``remember`` and ``recall`` receive."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.seen: list[object] = []

    def remember(self, items, round):  # type: ignore[no-untyped-def]
        self.seen.append(("remember", items, round))
        return super().remember(items, round)

    def recall(self, owner, query, k=5):  # type: ignore[no-untyped-def]
        self.seen.append(("recall", owner, query, k))
        return super().recall(owner, query, k)


class SpyJudge(AccountJudge):
    def __init__(self) -> None:
        super().__init__()
        self.requests_seen: list[object] = []

    def __call__(self, requests):  # type: ignore[no-untyped-def]
        self.requests_seen.extend(requests)
        return super().__call__(requests)


def _plain(items, seqs: set[int]) -> None:  # type: ignore[no-untyped-def]
    for owner, statements, vectors in items:
        assert type(owner) is str
        assert isinstance(statements, list) and all(type(s) is str for s in statements)
        assert isinstance(vectors, np.ndarray) and vectors.dtype == np.float32 and vectors.shape[0] == len(statements)


def test_backends_receive_plain_strings_and_vectors_only(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    spy = SpyBackend(embed.dim)
    k = run_kernel(tiny_play, spy, embed)
    seqs = {e.seq for e in k.world.events}
    assert any(c[0] == "remember" for c in spy.seen) and any(c[0] == "recall" for c in spy.seen)
    for call in spy.seen:
        if call[0] == "remember":
            _plain(call[1], seqs)
            assert type(call[2]) is int
        else:
            _, owner, query, kk = call
            assert type(owner) is str and isinstance(query, np.ndarray) and type(kk) is int
    # The facts live in the kernel's ledger alone.
    assert k.ledger.record_facts and not hasattr(spy, "ledger")


def test_the_judge_sees_statements_owners_and_candidates_only(tiny_play, embed, run_kernel, tmp_path) -> None:  # type: ignore[no-untyped-def]
    judge = SpyJudge()
    k = run_kernel(tiny_play, ConsensusBackend(tmp_path / "c", embed.dim, judge=judge), embed)
    assert judge.requests_seen
    allowed = {"statement", "owner", "candidates"}
    for r in judge.requests_seen:
        assert set(vars(r)) == allowed and type(r.statement) is str and type(r.owner) is str
        for c in r.candidates:  # engine records: a slotted Memory holds its fields only, so no event
            assert type(c) is Memory and c.metadata is None  # the sim deposits no metadata
    k.backend.close()


def test_ledger_scores_merges_against_facts() -> None:
    led = Ledger()
    led.deposited([(1, 0), (2, 0)], [10, 11], [False, False], 0)
    led.deposited([(1, 0)], [10], [True], 0)  # right
    led.deposited([(2, 0)], [10], [True], 0)  # wrong: record 10 holds fact (1, 0)
    led.deposited([(1, 0)], [12], [False], 1)  # missed: record 10 held it
    s = led.score
    assert (s.merges, s.correct, s.possible, s.found) == (2, 1, 3, 1)
    assert s.precision == 0.5 and s.recall == round(1 / 3, 4)
    assert led.sim_score.possible == 1 and led.sim_score.merges == 0
    led.retells(99, 10)
    assert led.fact(99, 3) == (1, 0) and led.fact(98, 3) == (98, 3)
    twin = led.fork()
    twin.deposited([(5, 0)], [20], [False], 2)
    assert 20 not in led.record_facts and 20 in twin.record_facts
