"""An LLM policy: a model chooses each agent's action through a callable.

``complete(prompt) -> str`` is all it needs; :func:`openai_complete` makes one
from any OpenAI-compatible chat endpoint (the ``openai`` package is imported
only then, and is not a dependency). The prompt carries the agent's persona,
place, company, short-term memory and its numbered recalled memories; the
model answers with one JSON object, naming the memory it draws on
(``"memory": n``) so the metrics can trace what it says.

Nothing a model answers stops a run: an empty, garbled or refused answer, a
JSON value of the wrong shape, an unknown action or place, or an exception
from ``complete`` itself becomes ``observe`` (and is counted in
``errors``). Agents stand where the source left them unless ``start`` places
them; when nobody is awake the kernel warns and stops.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from .actions import SOCIETY_ACTIONS, Action
from .agent_policy import AgentView
from .world import World

__all__ = ["LLMPolicy", "openai_complete", "build_prompt", "parse_action"]

_JSON = re.compile(r"\{.*\}", re.DOTALL)


def build_prompt(view: AgentView, world: str = "") -> str:
    """The prompt for one agent's decision."""
    goals = "; ".join(view.stm.goals) or "none"
    recent = "\n".join(f"- {e.text}" for e in view.stm.cache.ranked()[:5]) or "- nothing yet"
    heard = "\n".join(f"- {h}" for h in view.stm.heard[-3:]) or "- nothing"
    memories = "\n".join(f"{i}. {m}" for i, m in enumerate(view.memories, 1)) or "- nothing"
    places = ", ".join(view.places) or "none known"
    return (
        f"You are {view.agent}, in round {view.round}, at {view.place or 'no place'}"
        + (f", in the world of {world}" if world else "")
        + ".\n"
        f"Here with you: {', '.join(view.present) or 'nobody'}.\n"
        f"Places: {places}.\n"
        f"Your goals (most urgent first): {goals}\n"
        f"You recently did:\n{recent}\nYou just heard:\n{heard}\nYou remember:\n{memories}\n\n"
        "Choose one action and answer with one JSON object only, e.g. "
        '{"action": "say", "text": "...", "to": ["Name"], "memory": 1}. Actions: '
        "say (text, to), read_thread, observe, move (place: one of the places), "
        "act_on (text, to), ponder (text: a question to your memory). "
        '"memory": the number of the memory you draw on, if any.'
    )


def _strings(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return tuple(str(t) for t in items if isinstance(t, (str, int, float)) and str(t).strip())


def parse_action(
    agent: str, answer: Any, place: str | None = None, places: list[str] | None = None, memories: int = 0
) -> Action:
    """The model's JSON answer as an :class:`Action` (``observe`` when unusable)."""
    m = _JSON.search(answer) if isinstance(answer, str) else None
    try:
        obj: Any = json.loads(m.group(0)) if m else {}
    except (json.JSONDecodeError, RecursionError):
        obj = {}
    if not isinstance(obj, Mapping):
        return Action("observe", agent)
    kind = obj.get("action")
    if not isinstance(kind, str) or kind not in SOCIETY_ACTIONS:
        return Action("observe", agent)
    to = _strings(obj.get("to") or ())
    raw = obj.get("text")
    text = raw.strip() if isinstance(raw, str) else ""
    mem = obj.get("memory")
    basis = mem - 1 if isinstance(mem, int) and not isinstance(mem, bool) and 1 <= mem <= memories else None
    if kind == "move":
        dest = obj.get("place")
        if not isinstance(dest, str):
            return Action("observe", agent)
        known = {p.casefold(): p for p in (places or [])}
        if places is not None and dest.strip().casefold() not in known:
            return Action("observe", agent)  # a model may invent a place: it cannot go there
        return Action("move", agent, place=known.get(dest.strip().casefold(), dest.strip()))
    if kind in ("say", "act_on") and not re.search(r"\w", text):
        return Action("observe", agent)  # nothing (or only punctuation) to say or do
    return Action(kind, agent, text, to=to, place=place, basis=basis)


class LLMPolicy:
    """Every awake agent asks ``complete`` for its action each round.

    ``start`` places agents before the first round (agent -> place); without
    it they stand where the source left them.
    """

    def __init__(
        self, complete: Callable[[str], str], *, start: Mapping[str, str] | None = None, world: str = ""
    ) -> None:
        self.complete = complete
        self.start = dict(start or {})
        self.world = world
        self.calls = 0
        self.errors = 0

    def __repr__(self) -> str:
        return f"LLMPolicy(calls={self.calls}, errors={self.errors})"

    def begin_round(self, world: World, round: int) -> set[str]:
        """Places ``start``'s agents on the first round; wakes no one extra."""
        if round == 1:
            for agent, place in self.start.items():
                world.move(agent, place)
        return set()

    def decide(self, agent: str, view: AgentView) -> Action:
        """Asks the model for ``agent``'s action; an unusable answer becomes ``observe``."""
        self.calls += 1
        try:
            answer = self.complete(build_prompt(view, self.world))
        except Exception:  # noqa: BLE001 - an endpoint's failure must not end the run
            self.errors += 1
            return Action("observe", agent)
        action = parse_action(agent, answer, view.place, view.places or None, len(view.memories))
        if action.kind == "observe" and not (isinstance(answer, str) and '"observe"' in answer):
            self.errors += 1
        return action


def openai_complete(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.7,
    max_tokens: int = 200,
    **kwargs: Any,
) -> Callable[[str], str]:
    """``complete(prompt) -> str`` over an OpenAI-compatible chat endpoint,
    through the shared adapter (timeouts, retries, counters on
    ``complete.__self__.usage``); ``kwargs`` go to every request."""
    from agentsensus.llm.client import LLMClient  # imports openai: only users with a model need it

    client = LLMClient(
        model, base_url=base_url, api_key=api_key, temperature=temperature, max_tokens=max_tokens, options=kwargs
    )
    return client.complete
