"""An LLM policy: a model chooses each agent's action through a callable.

``complete(prompt, system=None) -> str`` is all it needs (a callable without
``system`` gets one prompt, the system message first); `openai_complete`
makes one from any OpenAI-compatible chat endpoint (the ``openai`` package is
imported only then, and is not a dependency). The system message says who
the agent is in the world of the play, its goal, its place and who is there,
and the story so far from its short-term memory (what it last did and
heard); the user message carries its numbered recalled memories and the
decision. The model answers with one JSON object, naming
the memory it draws on (``"memory": n``) so the metrics can trace what it
says.

Nothing a model answers stops a run: an exception from ``complete`` (counted
in ``errors``) or an empty, garbled or refused answer, a JSON value of the
wrong shape, an unknown action or place (counted in ``malformed``) becomes
``observe`` (counted in ``fallbacks``). Agents stand where the source left
them unless ``start`` places them; when nobody is awake the kernel warns and
stops.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .actions import SOCIETY_ACTIONS, Action
from .agent_policy import AgentView
from .world import World

__all__ = [
    "LLMPolicy",
    "LLMPolicies",
    "PolicyCounters",
    "openai_complete",
    "build_prompt",
    "build_system",
    "build_user",
    "story_so_far",
    "parse_action",
]

_JSON = re.compile(r"\{.*\}", re.DOTALL)
#: Lines of the story so far the system message recalls: what the agent last did, then what it last heard.
STORY_DID = 5
STORY_HEARD = 3


def story_so_far(view: AgentView) -> list[str]:
    """The story so far as the agent knows it from its short-term memory,
    oldest first: its last actions with what came of them, then what it
    last heard. Nothing from the world's own log: what an agent knows of
    the past beyond this comes from its long-term memory, the backend under
    test."""
    did = sorted(view.stm.cache.entries, key=lambda e: e.seq)[-STORY_DID:]
    lines = [f"In round {e.round}, you did: {e.text}" for e in did]
    return lines + [f"You heard: {h}" for h in view.stm.heard[-STORY_HEARD:]]


def build_system(view: AgentView, world: str = "", story: Sequence[str] = ()) -> str:
    """The system message of one agent's decision: persona, goal, place,
    company and the story so far (`story_so_far`)."""
    a = view.agent
    goals = list(view.stm.goals)  # most urgent first
    goal = (
        goals[0]
        if goals
        else (
            f"carry on your part in the story as {a} would: tell those who should know what you know, "
            "and find out what you do not"
        )
    )
    then = f" (after it: {'; '.join(goals[1:])})" if len(goals) > 1 else ""
    setting = f"a character in the world of {world}" if world else "a character of the story"
    lines = [
        f"You are {a}, {setting}. The play's last scene is over and its people go on living. "
        f"Speak and act as {a} would, in the manner of the play, and know only what {a} has seen, "
        "heard or remembers.",
        f"Your goal: {goal}{then}.",
        f"You are at {view.place or 'no place'}, in round {view.round}. "
        f"Here with you: {', '.join(view.present) or 'nobody'}.",
        f"Places: {', '.join(view.places) or 'none known'}.",
        "The story so far, as you lived it (oldest first):",
        *(f"- {s}" for s in story),
    ]
    if not story:
        lines.append("- nothing yet")
    return "\n".join(lines)


def build_user(view: AgentView) -> str:
    """The user message of one agent's decision: what its long-term memory recalled, and the choice."""
    memories = "\n".join(f"{i}. {m}" for i, m in enumerate(view.memories, 1)) or "- nothing"
    unread = f"{view.unread} things were said here that you have not read.\n" if view.unread else ""
    return (
        f"Round {view.round}. What do you do now?\n{unread}"
        f"You remember:\n{memories}\n\n"
        "Choose one action and answer with one JSON object only, e.g. "
        '{"action": "say", "text": "...", "to": ["Name"], "memory": 1}. Actions: '
        "say (text, to), read_thread, observe, move (place: one of the places), "
        "act_on (text, to), ponder (text: a question to your memory). "
        '"memory": the number of the memory you draw on, if any.'
    )


def build_prompt(view: AgentView, world: str = "") -> str:
    """The whole decision as one prompt (the system message, then the user
    message), for a ``complete`` that takes no ``system``."""
    return build_system(view, world, story_so_far(view)) + "\n\n" + build_user(view)


def _strings(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return tuple(str(t) for t in items if isinstance(t, (str, int, float)) and str(t).strip())


def parse_action(
    agent: str, answer: Any, place: str | None = None, places: list[str] | None = None, memories: int = 0
) -> Action:
    """The model's JSON answer as an `Action` (``observe`` when unusable)."""
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


@dataclass
class PolicyCounters:
    """Counters of the LLM policies of one run: ``calls`` (decisions asked
    of the model), ``errors`` (``complete`` raised), ``malformed`` (an
    unusable answer) and ``fallbacks`` (decisions that became ``observe``
    for either reason)."""

    calls: int = 0
    errors: int = 0
    malformed: int = 0
    fallbacks: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **delta: int) -> None:
        """Adds ``delta`` to the named counters."""
        with self._lock:
            for k, v in delta.items():
                setattr(self, k, getattr(self, k) + v)


def _takes_system(complete: Callable[..., str]) -> bool:
    try:
        params = inspect.signature(complete).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: one prompt
        return False
    return any(p.name == "system" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _counters(complete: Callable[..., str], c: PolicyCounters) -> dict[str, Any]:
    """``c`` with the endpoint's counters when ``complete`` is an ``LLMClient``'s method:
    then ``calls`` and ``errors`` are HTTP requests (retries included) and failed ones."""
    out: dict[str, Any] = {
        "decisions": c.calls,
        "calls": c.calls,
        "errors": c.errors,
        "failures": c.errors,
        "malformed": c.malformed,
        "fallbacks": c.fallbacks,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    usage = getattr(getattr(complete, "__self__", None), "usage", None)
    if usage is not None and hasattr(usage, "calls"):
        out.update(
            calls=usage.calls,
            errors=usage.errors,
            retries=usage.retries,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            seconds=usage.seconds,
        )
    return out


class LLMPolicy:
    """Every awake agent asks ``complete`` for its action each round.

    ``start`` places agents before the first round (agent -> place); without
    it they stand where the source left them. ``world`` names the play in the
    persona (default: the world's own name). ``counters`` may be shared by
    several policies (see `LLMPolicies`).
    """

    def __init__(
        self,
        complete: Callable[..., str],
        *,
        start: Mapping[str, str] | None = None,
        world: str = "",
        counters: PolicyCounters | None = None,
    ) -> None:
        self.complete = complete
        self.start = dict(start or {})
        self.world = world
        self.stats = counters if counters is not None else PolicyCounters()
        self._system = _takes_system(complete)
        self._world: World | None = None

    @property
    def calls(self) -> int:
        """Decisions asked of the model."""
        return self.stats.calls

    @property
    def errors(self) -> int:
        """Decisions whose ``complete`` raised."""
        return self.stats.errors

    @property
    def malformed(self) -> int:
        """Answers that named no usable action."""
        return self.stats.malformed

    @property
    def fallbacks(self) -> int:
        """Decisions that became ``observe`` because of an error or a malformed answer."""
        return self.stats.fallbacks

    def counters(self) -> dict[str, Any]:
        """The counters (and the endpoint's, when ``complete`` is an ``LLMClient``'s method)."""
        return _counters(self.complete, self.stats)

    def __repr__(self) -> str:
        return f"LLMPolicy(calls={self.calls}, errors={self.errors}, malformed={self.malformed})"

    def begin_round(self, world: World, round: int) -> set[str]:
        """Places ``start``'s agents on the first round; wakes no one extra."""
        self._world = world
        if round == 1:
            for agent, place in self.start.items():
                world.move(agent, place)
        return set()

    def _ask(self, view: AgentView) -> Any:
        title = self.world or (self._world.name if self._world is not None else "")
        if not self._system:
            return self.complete(build_prompt(view, title))
        return self.complete(build_user(view), system=build_system(view, title, story_so_far(view)))

    def decide(self, agent: str, view: AgentView) -> Action:
        """Asks the model for ``agent``'s action; an unusable answer becomes ``observe``."""
        self.stats.add(calls=1)
        try:
            answer = self._ask(view)
        except Exception:  # noqa: BLE001 - an endpoint's failure must not end the run
            self.stats.add(errors=1, fallbacks=1)
            return Action("observe", agent)
        action = parse_action(agent, answer, view.place, view.places or None, len(view.memories))
        if action.kind == "observe" and not (isinstance(answer, str) and '"observe"' in answer):
            self.stats.add(malformed=1, fallbacks=1)
        return action


class LLMPolicies:
    """A policy factory for ``run(policy=...)``: every `LLMPolicy` it
    makes shares ``complete``, ``start``, ``world`` and one set of counters,
    which `counters` reports (``metrics.json``'s ``llm.policy``)."""

    def __init__(
        self, complete: Callable[..., str], *, start: Mapping[str, str] | None = None, world: str = ""
    ) -> None:
        self.complete = complete
        self.start = dict(start or {})
        self.world = world
        self.stats = PolicyCounters()

    def __call__(self) -> LLMPolicy:
        """A new policy sharing this factory's counters."""
        return LLMPolicy(self.complete, start=self.start, world=self.world, counters=self.stats)

    def counters(self) -> dict[str, Any]:
        """The counters over every policy made (and the endpoint's, as `LLMPolicy.counters`)."""
        return _counters(self.complete, self.stats)

    def __repr__(self) -> str:
        return f"LLMPolicies({self.stats!r})"


def openai_complete(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.7,
    max_tokens: int = 200,
    **kwargs: Any,
) -> Callable[..., str]:
    """``complete(prompt, system=None) -> str`` over an OpenAI-compatible chat endpoint,
    through the shared adapter (timeouts, retries, counters on
    ``complete.__self__.usage``); ``kwargs`` go to every request."""
    from agentsensus.llm.client import LLMClient  # imports openai: only users with a model need it

    client = LLMClient(
        model, base_url=base_url, api_key=api_key, temperature=temperature, max_tokens=max_tokens, options=kwargs
    )
    return client.complete
