"""The LLM policy: garbage never stops a run; against the fake OpenAI-compatible server, answers vary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.llm_policy import LLMPolicy, openai_complete, parse_action
from agentsensus.sim.world import World

FAKE = Path(__file__).resolve().parents[1] / "llm" / "fake_openai.py"
GARBAGE = [
    "",
    "   ",
    "no json here",
    "{broken",
    "[1, 2, 3]",
    '"just a string"',
    "null",
    "42",
    '{"action": "fly"}',
    '{"action": "say"}',
    '{"action": "say", "text": "... --"}',
    '{"action": ["say"]}',
    '{"action": "move", "place": 7}',
    '{"action": "move", "place": "Atlantis"}',
    "I'm sorry, but I can't help with that.",
    '{"action": "say", "text": {"nested": 1}}',
    '{"action": "act_on", "text": "", "to": "Horatio"}',
    "{" * 5000,
]


def test_parse_action_accepts_json_and_falls_back_to_observe() -> None:
    a = parse_action(
        "Hamlet",
        'Sure! {"action": "say", "text": "To be, or not to be.", "to": ["Horatio"], "memory": 2}',
        "hall",
        memories=3,
    )
    assert (a.kind, a.text, a.to, a.place, a.basis) == ("say", "To be, or not to be.", ("Horatio",), "hall", 1)
    assert (
        parse_action("Hamlet", '{"action": "move", "place": "The Platform"}', places=["the platform"]).place
        == "the platform"
    )
    assert (
        parse_action("Hamlet", '{"action": "say", "text": "Hi there friend.", "memory": 9}', memories=2).basis is None
    )
    for bad in GARBAGE:
        assert parse_action("Hamlet", bad, places=["hall"]).kind == "observe", bad
    assert parse_action("Hamlet", None).kind == "observe"  # type: ignore[arg-type]


def _world() -> World:
    w = World.of("test", ["Hamlet", "Horatio"], ["hall", "the platform"])
    w.move("Hamlet", "hall")
    w.move("Horatio", "hall")
    return w


def test_garbage_and_failures_never_crash_a_run(embed) -> None:  # type: ignore[no-untyped-def]
    answers = iter(GARBAGE * 3)

    def complete(prompt: str) -> str:
        a = next(answers)
        if a == "42":
            raise TimeoutError("the endpoint went away")
        return a

    policy = LLMPolicy(complete)
    k = Kernel(_world(), policy, CollaborativeBackend(embed.dim), embed)
    k.run(len(GARBAGE) // 2)
    assert k.round == len(GARBAGE) // 2 and policy.calls == 2 * k.round
    assert policy.fallbacks >= policy.calls - 1 and k.world.events == []
    assert policy.errors >= 1 and policy.malformed >= policy.calls - 1 - policy.errors


def test_without_a_start_mapping_agents_stand_where_they_are(embed) -> None:  # type: ignore[no-untyped-def]
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return json.dumps({"action": "say", "text": f"Round talk number {len(prompts)} from me.", "memory": 1})

    k = Kernel(_world(), LLMPolicy(complete, world="Hamlet"), CollaborativeBackend(embed.dim), embed)
    k.run(3)
    assert k.round == 3 and len(prompts) == 6
    assert (
        "You are Hamlet" in prompts[0]
        and "world of Hamlet" in prompts[0]
        and "Places: hall, the platform" in prompts[0]
    )
    assert "1. " in prompts[-1]  # later prompts list the numbered memories recall returned
    assert k.backend.stats()["records"] > 0


@pytest.fixture(scope="module")
def fake_url():  # type: ignore[no-untyped-def]
    proc = subprocess.Popen([sys.executable, str(FAKE)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_llm_policy_against_the_fake_server_with_varied_answers(fake_url, embed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import urllib.request

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    varied = [
        {
            "content": json.dumps(
                {"action": "say", "text": "The ghost walks upon the platform tonight.", "to": ["Horatio"]}
            )
        },
        {"content": "I cannot answer that."},
        {"content": ""},
        {"content": '{"action": "move", "place": "the platform"}'},
        {"status": 500},
        {"content": '{"action": "ponder", "text": "What did Hamlet say?"}'},
        {"content": "{garbled"},
        {"content": '{"action": "say", "text": "!!!"}'},
    ]
    req = urllib.request.Request(
        fake_url + "/_script", json.dumps({"actions": varied}).encode(), {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(req, timeout=10).read()
    complete = openai_complete("fake-model", base_url=fake_url + "/v1", api_key="test")
    complete.__self__.backoff = 0.01  # type: ignore[attr-defined]
    policy = LLMPolicy(complete)
    w = _world()
    k = Kernel(w, policy, CollaborativeBackend(embed.dim), embed)
    k.run(5)
    assert k.round == 5 and policy.calls == 10
    kinds = [e.kind for e in w.events]
    assert "say" in kinds and "enter" in kinds  # the usable answers acted, the others observed
    assert w.agents["Horatio"].place == "the platform" or w.agents["Hamlet"].place == "the platform"
    assert policy.fallbacks >= 3 and policy.malformed >= 3


def test_the_first_message_is_a_system_message_with_persona_goal_place_and_story(tiny_play, embed, run_kernel) -> None:  # type: ignore[no-untyped-def]
    calls: list[tuple[str, str | None]] = []

    def complete(prompt: str, system: str | None = None) -> str:
        calls.append((prompt, system))
        return '{"action": "observe"}'

    policy = LLMPolicy(complete)
    k = run_kernel(tiny_play, CollaborativeBackend(embed.dim), embed, rounds=2, policy=policy)
    assert calls and policy.calls == len(calls) and policy.fallbacks == 0
    user, system = calls[-1]
    assert system is not None
    agent = system.split(",")[0].removeprefix("You are ")
    where = k.world.agents[agent].place
    assert system.startswith(f"You are {agent}, a character in the world of The Tiny Tragedy.")
    assert "Your goal: " in system and f"You are at {where}, in round 2." in system
    others = [a for a in k.world.present(where) if a != agent]
    assert f"Here with you: {', '.join(others) or 'nobody'}." in system
    # The story so far comes from its short-term memory: what it did in round 1.
    story = system.split("The story so far, as you lived it (oldest first):\n")[1].splitlines()
    assert story[0].startswith("- In round 1, you did: observe")
    assert "You are" not in user and user.startswith("Round 2.") and "You remember:" in user
    # Round 1's story was empty: the kernel's short-term memory starts with the run.
    assert calls[0][1] is not None and calls[0][1].endswith("(oldest first):\n- nothing yet")


def test_a_complete_without_system_gets_one_prompt_with_the_system_part_first(embed) -> None:  # type: ignore[no-untyped-def]
    prompts: list[str] = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "I can't help with that."

    policy = LLMPolicy(complete)
    Kernel(_world(), policy, CollaborativeBackend(embed.dim), embed).run(1)
    assert prompts[0].startswith("You are Hamlet, a character in the world of test.")
    assert prompts[0].index("Your goal: ") < prompts[0].index("Round 1.")
    assert (policy.calls, policy.errors, policy.malformed, policy.fallbacks) == (2, 0, 2, 2)
