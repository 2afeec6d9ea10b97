"""The six society actions and how the world applies them at the round barrier.

``say``, ``read_thread``, ``observe``, ``move`` and ``act_on`` are the paper's;
the sixth, ``ponder``, is ours: an agent consults its long-term memory on a
question of its choosing (the kernel runs the recall), so a policy can look
something up instead of acting. Only say, move and act_on change the world
and so produce events that witnesses remember.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .world import Event, World

__all__ = ["SOCIETY_ACTIONS", "Action", "apply_actions", "HEARD_BY"]

SOCIETY_ACTIONS = ("say", "read_thread", "observe", "move", "act_on", "ponder")
_WORD = re.compile(r"\w")
#: How a say's result names its listeners (the speaker's cache entry reads "say <text> -> heard by A, B").
HEARD_BY = "heard by "


@dataclass(frozen=True)
class Action:
    """One agent's choice for one round.

    ``say``: ``text`` to ``to`` (everyone present when empty; only them when
    ``aside``). ``move``: to ``place`` (``None`` leaves the stage). ``act_on``:
    ``text`` is what is done, ``to`` its targets, ``dies`` who dies by it.
    ``read_thread`` / ``observe`` / ``ponder`` read; ``text`` is the ponder
    question. ``agent == ""`` is the world itself (an ``act_on`` at ``place``
    with no doer, such as a flourish of trumpets). Actions sharing a finite
    ``order`` and kind are one joint event (a group entrance, a speech in
    chorus); the barrier applies actions by ``order``, then by the agent's
    place in the world. ``basis``: which of the memories the agent was shown
    this round the action draws on (an index into ``AgentView.memories``),
    so the metrics can trace what it says; ``None`` when it draws on none.
    ``form``: what kind of statement a say is (``utterances.FORMS``; empty
    for a source line or a model's say); ``subject``: the person a question
    or an answer is about.
    """

    kind: str
    agent: str
    text: str = ""
    to: tuple[str, ...] = ()
    place: str | None = None
    aside: bool = False
    dies: tuple[str, ...] = ()
    order: float = math.inf
    basis: int | None = None
    form: str = ""
    subject: str = ""

    def __post_init__(self) -> None:
        if self.kind not in SOCIETY_ACTIONS:
            raise ValueError(f"kind must be one of {SOCIETY_ACTIONS}, got {self.kind!r}")


def _result(action: Action, world: World) -> str:
    """What the acting agent learns from a read-only action."""
    here = world.agents[action.agent].place
    if action.kind == "observe":
        others = [a for a in world.present(here) if a != action.agent]
        return f"At {here}: " + (", ".join(others) if others else "nobody else") + "."
    if action.kind == "read_thread":
        thread = world.threads.get(here or "", [])[-5:]
        return " ".join(f"{' and '.join(e.actors)}: {e.text}" for e in thread) or "Nothing said yet."
    return ""


def apply_actions(
    world: World, actions: list[Action], round: int, when: str | None = None
) -> tuple[list[Event], dict[str, str]]:
    """Apply one round's actions in barrier order.

    Returns the events (with their witnesses, stamped ``when``, by default
    ``"round N"``) and, per acting agent, the result text of its action (for
    its short-term memory).
    """
    when = f"round {round}" if when is None else when
    rank = {name: i for i, name in enumerate(world.agents)}
    ordered = sorted(actions, key=lambda a: (a.order, rank.get(a.agent, len(rank))))
    events: list[Event] = []
    results: dict[str, str] = {}
    i = 0
    while i < len(ordered):
        head = ordered[i]
        group = [head]
        while (
            i + len(group) < len(ordered)
            and math.isfinite(head.order)
            and ordered[i + len(group)].order == head.order
            and ordered[i + len(group)].kind == head.kind
        ):
            group.append(ordered[i + len(group)])
        i += len(group)
        actors = tuple(a.agent for a in group)
        if head.kind in ("observe", "read_thread", "ponder"):
            for a in group:
                results[a.agent] = _result(a, world)
            continue
        event = _apply(world, head, actors, round, when)
        if event is not None:
            events.append(world.record(event))
            for actor in event.actors:
                if event.kind == "say":
                    # What a speaker learns is who heard it: its short-term memory of what it told whom.
                    heard = [w for w in event.witnesses if w not in event.actors]
                    results[actor] = HEARD_BY + ", ".join(heard) if heard else "nobody heard"
                else:
                    results[actor] = event.text
    return events, results


def _apply(world: World, action: Action, actors: tuple[str, ...], round: int, when: str) -> Event | None:
    seq = len(world.events)
    if action.kind == "move":
        if action.place is None:  # leaving: witnessed where they were
            where = world.agents[actors[0]].place
            if where is None:
                return None
            witnesses = tuple(world.present(where))
            for a in actors:
                world.move(a, None)
            return Event(seq, round, "exit", where, actors, f"exit {where}", witnesses=witnesses, when=when)
        movers = tuple(a for a in actors if world.agents[a].place != action.place)
        if not movers:
            return None
        for a in movers:
            world.move(a, action.place)
        witnesses = tuple(world.present(action.place))
        return Event(seq, round, "enter", action.place, movers, f"enter {action.place}", witnesses=witnesses, when=when)
    if action.kind in ("say", "act_on") and not _WORD.search(action.text or ""):
        return None  # a say of only punctuation (as a model may answer) says nothing
    if not any(actors):  # the world itself acts (a sound, a flourish): agent ""
        actors = ()
        place = action.place
    else:
        # say / act_on happen where the first actor is; someone not yet there appears.
        place = world.agents[actors[0]].place or action.place
    if place is None:
        return None
    for a in actors:
        if world.agents[a].place != place:
            world.move(a, place)
    present = world.present(place)
    if action.kind == "say":
        if action.aside:
            witnesses = tuple(a for a in present if a in actors or a in action.to)
        else:
            witnesses = tuple(present)
        targets = tuple(t for t in action.to if t in present and t not in actors)
        return Event(seq, round, "say", place, actors, action.text, targets, witnesses, action.aside, when)
    # act_on
    witnesses = tuple(present)
    targets = tuple(t for t in action.to if t not in actors)
    for dead in action.dies:
        world.kill(dead)
    return Event(seq, round, "act", place, actors, action.text, targets, witnesses, when=when, dies=action.dies)
