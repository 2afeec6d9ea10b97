"""Sedimentation: the whole source becomes owner-tagged memory at round 0.

The play is replayed beat by beat (`ScriptedPolicy`
groups its beats into steps in which no one acts twice, and never crosses a
scene). Every event of it (each speech, entrance, exit and act) is
witnessed by whoever is on stage, and each witness's own account of a step
becomes one deposit through the backend's own ingest (the kernel's
``sediment``). Events are stamped with their scene ("scene 12"), which
accounts of moves and acts state.

After the source, the living agents stand where the play last saw them, so
the story can go on from there.
"""

from __future__ import annotations

from .actions import apply_actions
from .agent_policy import ScriptedPolicy
from .play import Play
from .world import Event, World

__all__ = ["replay_source", "SourceReplay"]


class SourceReplay:
    """The source's events in deposit batches, with where everyone was last."""

    def __init__(self, batches: list[list[Event]], last_place: dict[str, str]) -> None:
        self.batches = batches
        self.last_place = last_place

    @property
    def events(self) -> int:
        """How many events the source has."""
        return sum(len(b) for b in self.batches)

    def place_survivors(self, world: World) -> list[str]:
        """Put every living agent where it was last seen; returns them."""
        world.clear_stage()
        placed = []
        for name, agent in world.agents.items():
            if agent.alive and name in self.last_place:
                world.move(name, self.last_place[name])
                placed.append(name)
        return placed


def replay_source(play: Play, world: World) -> SourceReplay:
    """Play every beat of ``play`` in ``world`` (round 0); the events, in batches."""
    policy = ScriptedPolicy(play)
    batches: list[list[Event]] = []
    last_place: dict[str, str] = {}
    step = 0
    while True:
        step += 1
        if policy.begin_round(world, step) is None:
            break
        scene = play.beats[min(policy.cursor, len(play.beats)) - 1].scene if policy.cursor else 0
        actions = policy.world_actions() + list(policy.planned.values())
        events, _ = apply_actions(world, actions, 0, when=f"scene {scene + 1}")
        for name, agent in world.agents.items():
            if agent.place is not None:
                last_place[name] = agent.place
        if events:
            batches.append(events)
    return SourceReplay(batches, last_place)
