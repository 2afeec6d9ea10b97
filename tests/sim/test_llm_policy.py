"""The LLM policy through a callable (no model, no network)."""

from __future__ import annotations

import json

from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.llm_policy import LLMPolicy, parse_action
from agentsensus.sim.world import World


def test_parse_action_accepts_json_and_falls_back_to_observe() -> None:
    a = parse_action("Hamlet", 'Sure! {"action": "say", "text": "To be, or not to be.", "to": ["Horatio"]}', "hall")
    assert (a.kind, a.text, a.to, a.place) == ("say", "To be, or not to be.", ("Horatio",), "hall")
    assert parse_action("Hamlet", '{"action": "move", "place": "the platform"}').place == "the platform"
    assert parse_action("Hamlet", '{"action": "move", "place": null}').place is None
    for bad in ("no json here", '{"action": "fly"}', '{"action": "say"}', "{broken", ""):
        assert parse_action("Hamlet", bad).kind == "observe"


def test_llm_policy_drives_the_kernel(embed) -> None:  # type: ignore[no-untyped-def]
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        me = prompt.split(",")[0].removeprefix("You are ")
        if me == "Hamlet":
            return json.dumps({"action": "say", "text": f"Round talk number {len(prompts)} from me."})
        if len(prompts) > 6:
            return json.dumps({"action": "move", "place": "the platform"})
        return json.dumps({"action": "ponder", "text": "What did Hamlet say?"})

    world = World.of("test", ["Hamlet", "Horatio"], ["hall", "the platform"])
    k = Kernel(world, LLMPolicy(complete, start={"Hamlet": "hall", "Horatio": "hall"}), CollaborativeBackend(embed.dim), embed)
    k.run(5)
    assert k.round == 5 and len(prompts) == 10
    assert "You are Hamlet" in prompts[0] and "Actions:" in prompts[0]
    says = [e for e in world.events if e.kind == "say"]
    assert says and set(says[0].witnesses) == {"Hamlet", "Horatio"}
    assert world.agents["Horatio"].place == "the platform"
    assert k.backend.stats()["records"] > 0
