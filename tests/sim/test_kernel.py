"""The round-barrier kernel: the whole source at round 0, then agents acting from memory."""

from __future__ import annotations

from collections import Counter

from agentsensus.sim.actions import SOCIETY_ACTIONS, Action, apply_actions
from agentsensus.sim.agent_policy import AgentView
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.g_memory import GMemoryBackend
from agentsensus.sim.generative_agents import GenerativeAgentsBackend
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.memory_policy import MemoryPolicy
from agentsensus.sim.sediment import replay_source
from agentsensus.sim.stm import Recalled, ShortTermMemory
from agentsensus.sim.utterances import FORMS
from agentsensus.sim.world import World


def test_the_whole_source_is_sedimented_at_round_zero(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed, rounds=1)
    log0 = k.logs[0]
    assert log0.round == 0
    kinds = Counter(e.kind for e in log0.events)
    assert kinds["say"] == sum(1 for b in tiny_play.beats if b.kind == "say") and kinds["enter"] and kinds["act"]
    # One deposit per witness and source step; every statement is one row of the collaborative table.
    assert log0.records == log0.statements
    said = [e.text for e in log0.events if e.kind == "say"]
    assert (
        said[0] == "Who's there? Stand and unfold yourself now." and said[-1] == "The rest is silence, my good friend."
    )
    assert all(e.when.startswith("scene ") for e in log0.events)


def test_witnesses_are_whoever_is_on_stage(tiny_play) -> None:  # type: ignore[no-untyped-def]
    w = World.of(tiny_play.title, tiny_play.cast, tiny_play.places)
    events = [e for b in replay_source(tiny_play, w).batches for e in b]
    ev = {e.text: e for e in events if e.kind == "say"}
    assert set(ev["Who's there? Stand and unfold yourself now."].witnesses) == {"Bernardo", "Francisco"}
    assert set(ev["The ghost will walk again upon the platform tonight."].witnesses) == {"Marcellus", "Horatio"}
    assert set(ev["A little more than kin, and less than kind."].witnesses) == {"Hamlet"}
    blow = [e for e in events if e.kind == "act"][0]
    assert blow.actors == ("Laertes",) and set(blow.witnesses) == {"Hamlet", "Laertes"}
    assert not w.agents["Hamlet"].alive and not w.agents["Laertes"].alive


def test_survivors_go_on_where_the_play_left_them(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, GMemoryBackend(embed, embed.dim), embed, rounds=8)
    assert k.round == 8
    for log in k.logs[1:]:
        agents = [a.agent for a in log.actions if a.agent]
        assert len(agents) == len(set(agents)), log.round  # one action per agent per round
        assert "Hamlet" not in agents and "Laertes" not in agents  # the dead stay dead
        assert len(log.recall_ms) == log.recalls == len(log.recall_calls)
    kinds = Counter(a.kind for log in k.logs[1:] for a in log.actions)
    assert set(kinds) <= set(SOCIETY_ACTIONS) and kinds["say"] > 0
    assert sum(log.statements for log in k.logs[1:]) > 0  # agents deposit what their actions returned
    # Recall is a step the short-term memory takes when it lacks something, not one before every decision.
    decisions = sum(1 for log in k.logs[1:] for a in log.actions if a.agent)
    assert 0 < sum(log.recalls for log in k.logs[1:]) < decisions


def test_what_agents_say_comes_from_what_they_recalled(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    k = run_kernel(tiny_play, GenerativeAgentsBackend(embed, embed.dim), embed, rounds=12)
    said = [s for log in k.logs[1:] for s in log.said]
    assert said and {s.form for s in said} <= set(FORMS)
    drawn = [s for s in said if s.basis is not None]
    assert drawn and {s.form for s in drawn} <= {"retelling", "inference", "answer"}
    for s in drawn:  # the row it drew on holds the source fact the statement's text comes from
        assert k.ledger.main_fact(s.basis) is not None
    assert any(s.form != "retelling" for s in said)  # agents say new things, not only retellings


def test_the_memory_design_changes_what_happens(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    runs = [
        run_kernel(tiny_play, b, embed, rounds=10)
        for b in (
            GenerativeAgentsBackend(embed, embed.dim),
            GMemoryBackend(embed, embed.dim),
            CollaborativeBackend(embed.dim),
        )
    ]
    stories = {tuple((e.kind, e.actors, e.text) for e in k.world.events) for k in runs}
    assert len(stories) > 1


def test_the_cache_policy_changes_the_run(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    runs = [
        run_kernel(tiny_play, GMemoryBackend(embed, embed.dim), embed, rounds=14, cache_policy=p, cache_capacity=2)
        for p in ("fifo", "relevance", "hybrid")
    ]
    stories = {tuple((e.kind, e.actors, e.text) for e in k.world.events) for k in runs}
    assert len(stories) > 1


def test_runs_are_deterministic_and_the_seed_matters(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    def story(seed: int):  # type: ignore[no-untyped-def]
        k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed, rounds=8, seed=seed)
        return [(e.kind, e.actors, e.text, e.witnesses) for e in k.world.events]

    assert story(1) == story(1)
    assert story(1) != story(2)


def test_a_say_of_only_punctuation_deposits_nothing(embed) -> None:  # type: ignore[no-untyped-def]
    class Mute:
        def begin_round(self, world, round):  # type: ignore[no-untyped-def]
            return set()

        def decide(self, agent, view):  # type: ignore[no-untyped-def]
            return Action("say", agent, "... --", place=view.place)

    w = World.of("w", ["A", "B"], ["hall"])
    w.move("A", "hall")
    w.move("B", "hall")
    k = Kernel(w, Mute(), CollaborativeBackend(embed.dim), embed)
    k.run(2)
    assert k.round == 2 and w.events == [] and k.backend.stats()["records"] == 0


def test_nobody_awake_warns_and_stops(embed) -> None:  # type: ignore[no-untyped-def]
    warned: list[str] = []
    k = Kernel(
        World.of("w", ["A"], ["hall"]), MemoryPolicy(0), CollaborativeBackend(embed.dim), embed, warn=warned.append
    )
    assert k.run(5) == [] and k.round == 0
    assert warned and "nobody is awake" in warned[0] and k.stopped


def test_barrier_orders_and_groups_actions() -> None:
    w = World.of("w", ["A", "B", "C"], ["hall"])
    acts = [
        Action("say", "B", "Second thing said here.", place="hall", order=2),
        Action("move", "A", place="hall", order=1),
        Action("move", "C", place="hall", order=1),
    ]
    events, results = apply_actions(w, acts, 1)
    assert [e.kind for e in events] == ["enter", "say"] and events[0].when == "round 1"
    assert events[0].actors == ("A", "C")  # one joint entrance
    assert set(events[1].witnesses) == {"A", "B", "C"}  # B appeared by speaking
    assert results["B"] == "heard by A, C"  # a speaker learns who heard it
    ev, res = apply_actions(w, [Action("observe", "A"), Action("read_thread", "C")], 2)
    assert ev == [] and "B" in res["A"] and "Second thing" in res["C"]


def test_an_agent_alone_goes_where_it_last_heard_of_company() -> None:
    # Two held rows name other places; the one made in a later round (as the
    # store says, not the text) is where the agent goes, whatever order recall returned them in.
    stm = ShortTermMemory()
    stm.recalled = [Recalled("B entered the garden.", 3, 12), Recalled("C entered the chapel.", 9, 12)]
    view = AgentView(
        agent="A",
        round=12,
        place="hall",
        present=[],
        stm=stm,
        memories=[r.text for r in stm.recalled],
        places=["hall", "garden", "chapel"],
        cast=["A", "B", "C"],
    )
    moves = [MemoryPolicy(seed).decide("A", view) for seed in range(8)]
    assert {(a.kind, a.place) for a in moves} == {("move", "chapel")}
