"""World events that change a fact supersede the old state, per owner; plans fenced on those memories.

A tiny world stepped by the real kernel over a real consensus store on disk:
Ben enters the hall where Anna and Dan are; Anna goes to the garden, Dan to
the chapel; Anna, recalling that Ben is in the hall, announces she will go
there to find him; that same round Ben comes to the garden. Anna learned of
the move (she saw it), Dan did not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agentsensus.sim.account_judge import AccountJudge
from agentsensus.sim.actions import Action
from agentsensus.sim.agent_policy import AgentView, RecallNeed
from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.fact_judge import FactJudge
from agentsensus.sim.fenced_plans import PlanPolicy
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.sim_embedder import CachedEmbedder
from agentsensus.sim.world import World
from agentsensus.sim.world_facts import FactBook, State, changes, statement

PLACES = ["the hall", "the garden", "the chapel"]
# (round, agent) -> action; everyone else observes.
SCRIPT = {
    (1, "Ben"): Action("move", "Ben", place="the hall"),
    (2, "Anna"): Action("move", "Anna", place="the garden"),
    (2, "Dan"): Action("move", "Dan", place="the chapel"),
    (3, "Anna"): Action("say", "Anna", "I will go to the hall to find Ben.", form="intention", subject="Ben"),
    (3, "Ben"): Action("move", "Ben", place="the garden"),
}


class Scripted:
    """The script above; Anna asks her memory where Ben is in round 3."""

    def begin_round(self, world: World, round: int) -> set[str] | None:
        return set() if round <= 6 else None

    def recall_need(self, agent: str, view: AgentView) -> RecallNeed | None:
        return RecallNeed("Where is Ben?", "Ben") if (view.round, agent) == (3, "Anna") else None

    def decide(self, agent: str, view: AgentView) -> Action:
        return SCRIPT.get((view.round, agent), Action("observe", agent))


def _world() -> World:
    world = World.of("tiny", ["Anna", "Ben", "Dan"], PLACES)
    world.move("Anna", "the hall")
    world.move("Dan", "the hall")
    world.move("Ben", "the chapel")
    return world


def _run(
    tmp_path: Path, embed: CachedEmbedder, *, fence: bool | None, rounds: int = 6
) -> tuple[Kernel, FactBook, ConsensusBackend, PlanPolicy | None]:
    """The script over a consensus store; ``fence=None``: no plans (the scripted policy alone)."""
    book = FactBook()
    backend = ConsensusBackend(tmp_path / "store", embed.dim, judge=FactJudge(AccountJudge(), book))
    plans = None if fence is None else PlanPolicy(Scripted(), book, backend.stores[""], backend, embed, fence=fence)
    kernel = Kernel(_world(), plans or Scripted(), backend, embed, facts=book)
    kernel.start_after_source()
    kernel.run(2)
    kernel.set_goals({"Anna": ["Ben"]})  # after she met him in the hall: now she seeks him
    kernel.run(rounds - 2)
    return kernel, book, backend, plans


def _recall(backend: ConsensusBackend, embed: CachedEmbedder, owner: str, book: FactBook) -> list[State]:
    (q,) = embed(["Ben, where is Ben?"])
    return [
        s for m in backend.recall(owner, q, k=10) if (s := book.state_of(m.text)) is not None and s.subject == "Ben"
    ]


def test_changes_come_from_the_event_structure() -> None:
    world = _world()
    from agentsensus.sim.actions import apply_actions

    (enter,), _ = apply_actions(world, [Action("move", "Ben", place="the hall")], 1)
    (death,), _ = apply_actions(
        world, [Action("act_on", "Anna", "Anna stabs Ben.", place="the hall", dies=("Ben",))], 2
    )
    (talk,), _ = apply_actions(world, [Action("say", "Dan", "Ben is in the garden, they say.")], 3)
    assert changes(enter) == [State("Ben", "at", "the hall", "round 1")]
    assert changes(death) == [State("Ben", "dead", "the hall", "round 2")]
    assert changes(talk) == []  # words that name a place change no fact
    assert statement(changes(enter)[0]) == "Ben, as of round 1: Ben is in the hall."


def test_the_learner_recalls_the_new_state_only(tmp_path: Path, embed: CachedEmbedder) -> None:
    _, book, backend, _ = _run(tmp_path, embed, fence=None, rounds=3)
    try:
        hall, garden = State("Ben", "at", "the hall", "round 1"), State("Ben", "at", "the garden", "round 3")
        assert _recall(backend, embed, "Anna", book) == [garden]  # she saw him come
        assert _recall(backend, embed, "Dan", book) == [hall]  # he was in the chapel
        store = backend.stores[""]
        new = next(m for m in store.owned("Anna") if store.get(m).text == statement(garden))
        (old,) = [m.id for m in store.chain(new)][:1]
        assert store.get(old).text == statement(hall) and store.get(old).superseded_by == new
        assert book.linked >= 1
        # Anna held the hall as of round 2; Dan still does.
        (q,) = embed(["Ben, where is Ben?"])
        assert statement(hall) in [m.text for m in store.recall("Anna", q, k=10, as_of=2)]
    finally:
        backend.close()


def test_no_change_of_state_no_supersession(tmp_path: Path, embed: CachedEmbedder) -> None:
    """Nobody moves after the start: nothing supersedes, and no plan can go stale."""
    book = FactBook()
    backend = ConsensusBackend(tmp_path / "store", embed.dim, judge=FactJudge(AccountJudge(), book))
    try:
        quiet = {k: v for k, v in SCRIPT.items() if v.kind != "move"}

        class Still(Scripted):
            def decide(self, agent: str, view: AgentView) -> Action:
                return quiet.get((view.round, agent), Action("observe", agent))

        plans = PlanPolicy(Still(), book, backend.stores[""], backend, embed, fence=False)
        Kernel(_world(), plans, backend, embed, facts=book).run(6)
        assert book.learned == 0 and book.linked == 0
        assert plans.counts.stale_plans == plans.counts.stale_actions == plans.counts.outdated_actions == 0
    finally:
        backend.close()


@pytest.mark.parametrize("fence", [True, False])
def test_the_fence_keeps_a_stale_plan_from_acting(tmp_path: Path, embed: CachedEmbedder, fence: bool) -> None:
    kernel, _, backend, plans = _run(tmp_path, embed, fence=fence)
    try:
        assert plans is not None
        c = plans.counts
        assert c.plans == 1 and c.carried_out == 1
        assert c.stale_plans == 1  # Anna saw Ben come to the garden before she acted on the hall
        anna_moves = [a.place for log in kernel.logs for a in log.actions if a.agent == "Anna" and a.kind == "move"]
        if fence:
            assert c.stale_actions == 0 and c.caught == 1
            assert anna_moves == ["the garden"]  # only the move of round 2: replanned, Ben is here
            assert c.replanned == 1
        else:
            assert c.stale_actions == 1 and c.caught == 0
            assert anna_moves == ["the garden", "the hall"]  # she went where he no longer is
    finally:
        backend.close()


def test_listeners_of_a_retold_state_learn_it() -> None:
    world = _world()
    from agentsensus.sim.actions import apply_actions

    (enter,), _ = apply_actions(world, [Action("move", "Ben", place="the hall")], 1)
    book = FactBook()
    (text,) = book.learners([enter])["Anna"]
    world.move("Dan", "the garden")
    world.move("Anna", "the garden")
    (told,), _ = apply_actions(world, [Action("say", "Anna", "Ben is in the hall.", to=("Dan",))], 2)
    learned = book.learners([told], [(told, text)])
    assert learned == {"Dan": [text]}  # the listener, not the speaker; a say changes no fact itself
    assert book.told == 1
