"""The round-barrier kernel on the tiny play."""

from __future__ import annotations

from collections import Counter

from agentsensus.sim.accounts import account
from agentsensus.sim.actions import SOCIETY_ACTIONS, Action, apply_actions
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.g_memory import GMemoryBackend
from agentsensus.sim.generative_agents import GenerativeAgentsBackend
from agentsensus.sim.world import World


def test_every_agent_acts_at_most_once_per_round(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed)
    for log in k.logs[1:]:
        agents = [a.agent for a in log.actions if a.agent]
        assert len(agents) == len(set(agents)), log.round
    assert k.logs[0].round == 0 and k.logs[0].statements > 0  # sediment at round 0


def test_story_end_stops_the_run(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed, rounds=500)
    assert 5 < k.round < 100
    assert k.step() is None
    assert not k.world.agents["Hamlet"].alive and not k.world.agents["Laertes"].alive
    said = [e.text for e in k.world.events if e.kind == "say"]
    assert said[-1] == "The rest is silence, my good friend."


def test_witnesses_are_whoever_is_on_stage(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed)
    ev = {e.text: e for e in k.world.events if e.kind == "say"}
    assert set(ev["Who's there? Stand and unfold yourself now."].witnesses) == {"Bernardo", "Francisco"}
    assert set(ev["Friends to this ground, and liegemen to the Dane."].witnesses) == {
        "Bernardo", "Francisco", "Horatio", "Marcellus"}
    # After Francisco's exit; an aside reaches only its addressee.
    assert set(ev["The ghost will walk again upon the platform tonight."].witnesses) == {"Marcellus", "Horatio"}
    assert set(ev["A little more than kin, and less than kind."].witnesses) == {"Hamlet"}
    assert set(ev["Good Hamlet, cast thy nighted colour off."].witnesses) == {
        "King Claudius", "Queen Gertrude", "Hamlet", "Lord Polonius"}
    assert set(ev["Horatio, or I do forget myself entirely!"].witnesses) == {"Hamlet", "Horatio"}
    blow = [e for e in k.world.events if e.kind == "act"][0]
    assert blow.actors == ("Laertes",) and set(blow.witnesses) == {"Hamlet", "Laertes"}


def test_equal_granularity_across_backends(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    runs = [run_kernel(tiny_play, b, embed) for b in (
        GenerativeAgentsBackend(embed, embed.dim), GMemoryBackend(embed, embed.dim), CollaborativeBackend(embed.dim))]
    shapes = {tuple((log.deposits, log.statements) for log in k.logs) for k in runs}
    assert len(shapes) == 1  # the same deposits, round by round
    k = runs[2]
    expected = sum(len(account(e, w)) for e in k.world.events for w in e.witnesses) + k.logs[0].statements
    assert k.backend.stats()["records"] == expected  # collaborative stores exactly one row per statement


def test_each_awake_agent_recalls_and_all_six_actions_exist(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, GMemoryBackend(embed, embed.dim), embed)
    kinds = Counter(a.kind for log in k.logs for a in log.actions)
    assert {"say", "move", "act_on", "read_thread", "observe", "ponder"} == set(SOCIETY_ACTIONS)
    assert kinds["say"] and kinds["move"] and kinds["act_on"] and kinds["read_thread"] and kinds["ponder"]
    for log in k.logs[1:]:
        decided = sum(1 for a in log.actions if a.agent)
        ponders = sum(1 for a in log.actions if a.kind == "ponder")
        assert log.recalls == decided + ponders
        assert len(log.recall_ms) == log.recalls
    assert any(len(stm.cache) for stm in k.stm.values())


def test_runs_are_deterministic(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    a = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed)
    b = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed)
    assert [(e.kind, e.actors, e.text, e.witnesses) for e in a.world.events] == \
           [(e.kind, e.actors, e.text, e.witnesses) for e in b.world.events]


def test_barrier_orders_and_groups_actions() -> None:
    w = World.of("w", ["A", "B", "C"], ["hall"])
    acts = [Action("say", "B", "Second thing said here.", place="hall", order=2),
            Action("move", "A", place="hall", order=1), Action("move", "C", place="hall", order=1)]
    events, results = apply_actions(w, acts, 1)
    assert [e.kind for e in events] == ["enter", "say"]
    assert events[0].actors == ("A", "C")  # one joint entrance
    assert set(events[1].witnesses) == {"A", "B", "C"}  # B appeared by speaking
    assert results["B"] == "Second thing said here."
    ev, res = apply_actions(w, [Action("observe", "A"), Action("read_thread", "C")], 2)
    assert ev == [] and "B" in res["A"] and "Second thing" in res["C"]
