"""How agents choose actions: the policy interface, and the scripted replay
that plays a source's events at round 0.

A policy is asked once per round which sleeping agents it wakes
(``begin_round``; ``None`` means the story is over), then once per awake agent
for that agent's action (``decide``), from an `AgentView`. Policies may
also offer actions of the world itself (``world_actions``: a sound, a
flourish) for the round. The default policy that acts from memory is
`MemoryPolicy`; the model-driven one is
`LLMPolicy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .actions import Action
from .play import Beat, Play
from .stm import ShortTermMemory
from .world import World

__all__ = ["AgentView", "RecallNeed", "Policy", "ScriptedPolicy"]


@dataclass
class AgentView:
    """What an agent knows when it decides: where it is, who is there, its
    short-term memory and the long-term memories it holds there.

    ``memories``: the texts of the rows its short-term memory holds (what
    recall returned this round first, then what earlier recalls returned
    that it still holds); an action's ``basis`` indexes into it.
    """

    agent: str
    round: int
    place: str | None
    present: list[str]
    stm: ShortTermMemory
    memories: list[str] = field(default_factory=list)
    unread: int = 0  # things said at its place since it last read the thread
    places: list[str] = field(default_factory=list)  # every place of the world
    cast: list[str] = field(default_factory=list)  # every agent of the world, living or not


@dataclass(frozen=True)
class RecallNeed:
    """What a decision lacks, as a recall query: ``text`` to search with,
    and the person it is about (``subject``, for Table 4's "q in hits")."""

    text: str
    subject: str | None = None


@runtime_checkable
class Policy(Protocol):
    """What drives the agents: wakes them each round and picks each one's action."""

    def begin_round(self, world: World, round: int) -> set[str] | None:
        """Agents to wake this round (beyond the awake); ``None`` ends the run."""

    def decide(self, agent: str, view: AgentView) -> Action:
        """The agent's action for this round."""


# A policy may also offer ``recall_need(agent, view) -> RecallNeed | None``: what
# its decision lacks from long-term memory (the kernel then recalls before
# ``decide``). A policy without it recalls with its focus when its short-term
# memory holds no row (the kernel's default, ``Kernel.recall_need``).


class ScriptedPolicy:
    """Replays a play (the source, sedimented at round 0): each round, every awake agent steps once.

    A round takes the script's next beats in order for as long as no agent
    would act twice (the round barrier), and never runs past a scene change.
    Agents with a beat in the round act it; the other awake agents read the
    thread of talk they have not read, ponder their new surroundings, or
    observe. A new scene clears the stage before the round starts.
    """

    def __init__(self, play: Play) -> None:
        self.play = play
        self.cursor = 0
        self.place: str | None = None
        self.present: list[str] = []  # the script's own model of the stage
        self.dead: set[str] = set()
        self.planned: dict[str, Action] = {}
        self.narration: list[Action] = []
        self.arrived: set[str] = set()  # entered last round: ponder the place
        self._entering: set[str] = set()

    @property
    def finished(self) -> bool:
        """True once every beat of the play has been played."""
        return self.cursor >= len(self.play.beats)

    def _actors(self, beat: Beat) -> tuple[str, ...]:
        if beat.kind == "say":
            who = beat.actors if beat.actors and not beat.everyone else tuple(self.present) + beat.actors
        elif beat.kind == "enter":
            who = tuple(a for a in beat.actors if a not in self.present)
        elif beat.kind == "exit":
            if beat.everyone:
                who = tuple(self.present)
            elif beat.all_but:
                who = tuple(a for a in self.present if a not in beat.actors)
            else:
                who = tuple(a for a in beat.actors if a in self.present)
        else:
            who = beat.actors
        return tuple(dict.fromkeys(a for a in who if a not in self.dead))

    def begin_round(self, world: World, round: int) -> set[str] | None:
        """Plans the round's beats; returns the agents to wake, or ``None`` when the play is over."""
        self.planned, self.narration = {}, []
        self.arrived, self._entering = self._entering, set()
        beats = self.play.beats
        while self.cursor < len(beats) and beats[self.cursor].kind == "scene":
            # A scene change is a cut: everyone leaves, unseen, before the round.
            world.clear_stage()
            self.place = beats[self.cursor].text
            world.add_place(self.place)
            self.present, self.arrived = [], set()
            self.cursor += 1
        if self.cursor >= len(beats):
            return None
        used: set[str] = set()
        while self.cursor < len(beats):
            beat = beats[self.cursor]
            if beat.kind == "scene":
                break
            actors = self._actors(beat)
            if beat.kind == "act" and not beat.actors:
                self.narration.append(Action("act_on", "", beat.text, place=self.place, order=beat.index))
                self.cursor += 1
                continue
            if not actors:
                self.cursor += 1  # nobody left to do it (dead, absent)
                continue
            if used & set(actors):
                break
            for a in actors:
                world.add_agent(a)
                self.planned[a] = self._action(beat, a)
            self._advance_stage(beat, actors)
            used.update(actors)
            self.cursor += 1
        return set(self.planned)

    def _action(self, beat: Beat, agent: str) -> Action:
        if beat.kind == "say":
            return Action(
                "say", agent, beat.text, to=beat.targets, place=self.place, aside=beat.aside, order=beat.index
            )
        if beat.kind == "enter":
            return Action("move", agent, place=self.place, order=beat.index)
        if beat.kind == "exit":
            return Action("move", agent, place=None, order=beat.index)
        return Action("act_on", agent, beat.text, to=beat.targets, place=self.place, dies=beat.dies, order=beat.index)

    def _advance_stage(self, beat: Beat, actors: tuple[str, ...]) -> None:
        if beat.kind == "exit":
            self.present = [a for a in self.present if a not in actors]
            return
        for a in actors:
            if a not in self.present:
                self.present.append(a)
        if beat.kind == "enter":
            self._entering.update(actors)
        self.dead.update(beat.dies)
        self.present = [a for a in self.present if a not in self.dead]

    def world_actions(self) -> list[Action]:
        """This round's sounds and crowd business, done by no agent."""
        return list(self.narration)

    def decide(self, agent: str, view: AgentView) -> Action:
        """The action the script gives ``agent`` this round (``observe`` when it gives none)."""
        if agent in self.planned:
            return self.planned[agent]
        if agent in self.arrived and view.place:
            return Action("ponder", agent, f"What do I know of {view.place}?")
        if view.unread:
            return Action("read_thread", agent)
        return Action("observe", agent)
