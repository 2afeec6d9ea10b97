"""The state-fact runs: the consensus store where changes of state supersede, with plans fenced on memories.

Two runs of the consensus design from a copy of its sediment, beside the
main run (which they leave as it is): each first deposits the source's
changes of state (`Kernel.learn_source_facts`: every entrance, exit and
death, as its witnesses' statements of the new state, each superseding the
older state for those who learned it), then steps the same rounds with
agents who learn of a change depositing the new state, and who plan from
the state records they recall (`fenced_plans`). ``fence_on`` guards each
plan before its move; ``fence_off`` is the control, the same world without
the guard. Both report the same counts, so the difference is the fence's.
"""

from __future__ import annotations

from typing import Any

from .fact_judge import FactJudge
from .fenced_plans import PlanPolicy
from .kernel import Kernel
from .progress import Progress
from .world_facts import FactBook

__all__ = ["fact_runs"]


def fact_runs(runner: Any, sed: Any, rounds: int, label: str, *, cache_policy: str) -> dict[str, Any]:
    """``{"fence_on": counts, "fence_off": counts}`` from two runs of ``rounds`` rounds on copies of ``sed``.

    ``runner`` and ``sed`` are the runner's (`runner._Runner`, `runner._Sedimented`
    of the consensus store). The runs step here: with a placement (``--ray``),
    whose stores are actors, they start from a sediment of their own made
    here, the same store as the placement's (the Ray run equals the local one).
    """
    placement = runner.placement
    own = None
    if placement is not None:
        runner.placement = None
        try:
            own = sed = runner.sediment("consensus", f"{label} facts sediment")
        finally:
            runner.placement = placement
    try:
        return {
            name: _one(runner, sed, rounds, f"{label} facts {name}", cache_policy=cache_policy, fence=fence)
            for name, fence in (("fence_on", True), ("fence_off", False))
        }
    finally:
        if own is not None:
            own.backend.close()


def _one(runner: Any, sed: Any, rounds: int, label: str, *, cache_policy: str, fence: bool) -> dict[str, Any]:
    book = FactBook()
    sed.forks += 1
    world, ledger = sed.world.fork(), sed.ledger.fork()
    path = runner.store_dir / f"facts-{id(sed):x}-run{sed.forks}"
    backend = sed.backend.fork(path)
    backend.rejudge(lambda judge: FactJudge(judge, book))
    try:
        plans = PlanPolicy(runner.policy(), book, backend.stores[""], backend, runner.embed, fence=fence)
        kernel = Kernel(
            world,
            plans,
            backend,
            runner.embed,
            cache_policy=cache_policy,
            variation=runner.variation,
            ledger=ledger,
            facts=book,
        )
        kernel.logs.append(sed.log)
        source = kernel.learn_source_facts(runner.replay.batches)
        kernel.start_after_source()
        kernel.set_goals(runner.seek)
        bar = Progress(label, rounds, enabled=runner.progress)
        kernel.run(rounds, lambda log: bar.update(log.round, f"{plans.counts.plans} plans"))
        c = plans.counts
        bar.close(f"{c.stale_plans} plans on superseded memories, {c.stale_actions} moves on them")
        return {
            "rounds": kernel.logs[-1].round,
            "source_states": source,
            "states": book.learned,
            "told": book.told,
            "linked": book.linked,
            "unlinked": book.unlinked,
            **plans.counts.as_dict(),
        }
    finally:
        backend.close()
