"""An LLM policy: a model chooses each agent's action through a callable.

``complete(prompt) -> str`` is all it needs; :func:`openai_complete` makes one
from any OpenAI-compatible chat endpoint (the ``openai`` package is imported
only then, and is not a dependency). The model answers with one JSON object;
an answer that does not parse, or names an unknown action, becomes
``observe`` so a run never stops on a model's mistake.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from .actions import SOCIETY_ACTIONS, Action
from .policy import AgentView
from .world import World

__all__ = ["LLMPolicy", "openai_complete", "build_prompt", "parse_action"]

_JSON = re.compile(r"\{.*\}", re.DOTALL)


def build_prompt(view: AgentView) -> str:
    """The prompt for one agent's decision."""
    goals = "; ".join(view.stm.goals) or "none"
    recent = "\n".join(f"- {e.text}" for e in view.stm.cache.ranked()[:5]) or "- nothing yet"
    heard = "\n".join(f"- {h}" for h in view.stm.heard[-3:]) or "- nothing"
    memories = "\n".join(f"- {m}" for m in view.memories) or "- nothing"
    return (
        f"You are {view.agent}, in round {view.round}, at {view.place or 'no place'}.\n"
        f"Here with you: {', '.join(view.present) or 'nobody'}.\n"
        f"Your goals (most urgent first): {goals}\n"
        f"You recently did:\n{recent}\nYou just heard:\n{heard}\nYou remember:\n{memories}\n\n"
        "Choose one action and answer with one JSON object only, e.g. "
        '{"action": "say", "text": "...", "to": ["Name"]}. Actions: '
        "say (text, to), read_thread, observe, move (place, or null to leave), "
        "act_on (text, to), ponder (text: a question to your memory)."
    )


def parse_action(agent: str, answer: str, place: str | None = None) -> Action:
    """The model's JSON answer as an :class:`Action` (``observe`` when unusable)."""
    m = _JSON.search(answer or "")
    try:
        obj: Mapping[str, Any] = json.loads(m.group(0)) if m else {}
    except json.JSONDecodeError:
        obj = {}
    kind = obj.get("action") if isinstance(obj, dict) else None
    if kind not in SOCIETY_ACTIONS:
        return Action("observe", agent)
    to = obj.get("to") or ()
    to = tuple(str(t) for t in (to if isinstance(to, (list, tuple)) else [to]))
    text = str(obj.get("text") or "")
    if kind == "move":
        dest = obj.get("place")
        return Action("move", agent, place=str(dest) if dest else None)
    if kind in ("say", "act_on") and not text:
        return Action("observe", agent)
    return Action(kind, agent, text, to=to, place=place)


class LLMPolicy:
    """Every awake agent asks ``complete`` for its action each round.

    ``start`` places agents before the first round (agent -> place); the run
    lasts as many rounds as the kernel is asked for.
    """

    def __init__(self, complete: Callable[[str], str], *, start: Mapping[str, str] | None = None) -> None:
        self.complete = complete
        self.start = dict(start or {})
        self.calls = 0

    def begin_round(self, world: World, round: int) -> set[str]:
        """Wakes every agent on the first round; no one extra after."""
        if round == 1:
            for agent, place in self.start.items():
                world.move(agent, place)
        return set()

    def decide(self, agent: str, view: AgentView) -> Action:
        """Asks the model for ``agent``'s action; an unusable answer becomes ``observe``."""
        self.calls += 1
        return parse_action(agent, self.complete(build_prompt(view)), view.place)


def openai_complete(model: str, *, base_url: str | None = None, api_key: str | None = None,
                    temperature: float = 0.7, max_tokens: int = 200, **kwargs: Any) -> Callable[[str], str]:
    """``complete(prompt) -> str`` over an OpenAI-compatible chat endpoint,
    through the shared adapter (timeouts, retries, counters on
    ``complete.__self__.usage``); ``kwargs`` go to every request."""
    from agentsensus.llm_client import LLMClient  # imports openai: only users with a model need it

    client = LLMClient(model, base_url=base_url, api_key=api_key, temperature=temperature,
                       max_tokens=max_tokens, options=kwargs)
    return client.complete
