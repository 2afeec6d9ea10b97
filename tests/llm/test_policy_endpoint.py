"""The simulation's LLM policy through the shared OpenAI adapter and the fake server."""

from __future__ import annotations

from agentsensus.llm.client import LLMClient
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.llm_policy import LLMPolicy, openai_complete
from agentsensus.sim.sim_embedder import get_embedder
from agentsensus.sim.world import World
from fake_openai import FakeOpenAI


def test_openai_complete_drives_the_kernel(fake: FakeOpenAI) -> None:
    complete = openai_complete("fake-model", base_url=fake.url, seed=3)
    client = complete.__self__  # type: ignore[attr-defined]
    assert isinstance(client, LLMClient)
    world = World.of("test", ["Hamlet", "Horatio"], ["hall"])
    embed = get_embedder("hash")
    k = Kernel(
        world, LLMPolicy(complete, start={"Hamlet": "hall", "Horatio": "hall"}), CollaborativeBackend(embed.dim), embed
    )
    k.run(2)
    bodies = fake.log()
    assert len(bodies) == 4 and client.usage.calls == 4
    assert (bodies[0]["temperature"], bodies[0]["max_tokens"], bodies[0]["seed"]) == (0.7, 200, 3)
    says = [e for e in world.events if e.kind == "say"]
    assert {e.text for e in says} >= {"Hamlet says the fake model is listening."}
    # The first message is the system message: persona, goal, place and company.
    first = bodies[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user"]
    system = first[0]["content"]
    assert system.startswith("You are Hamlet, a character in the world of test.")
    assert "Your goal: " in system and "You are at hall, in round 1. Here with you: Horatio." in system
    assert "The story so far" in system and "You are" not in first[1]["content"]


def test_a_failed_call_is_retried_for_the_policy(fake: FakeOpenAI) -> None:
    client = LLMClient("fake-model", base_url=fake.url, backoff=0.01)
    fake.script({"status": 500})
    assert "fake model" in client.complete("You are Hamlet, in round 1.")
    assert (client.usage.calls, client.usage.errors) == (2, 1)
    assert "Hamlet says" in client.complete("Round 1.", system="You are Hamlet, in round 1.")
    assert [m["role"] for m in fake.log()[-1]["messages"]] == ["system", "user"]
