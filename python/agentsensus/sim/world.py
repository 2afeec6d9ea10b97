"""The world: places, agents where they are, and the events that happened."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Agent", "Event", "World"]


@dataclass
class Agent:
    """An agent: its name, where it is (``None``: off stage) and whether it lives."""

    name: str
    place: str | None = None
    alive: bool = True

    @property
    def awake(self) -> bool:
        """An agent steps in a round when it is somewhere and alive."""
        return self.alive and self.place is not None


@dataclass(frozen=True)
class Event:
    """Something that happened, with everyone who witnessed it.

    ``kind``: ``say``, ``enter``, ``exit`` or ``act``. ``actors`` did it
    (speakers, movers, the doer; empty for a sound), ``targets`` are its
    addressees or objects, ``dies`` who died by an act. ``when`` is the world's clock in words ("scene 3"
    while the source is sedimented, "round 7" after), which accounts of moves
    and acts state. The world's ``seq`` identifies the event for the
    simulation's own bookkeeping (provenance); no memory backend or judge
    ever sees it.
    """

    seq: int
    round: int
    kind: str
    place: str
    actors: tuple[str, ...]
    text: str
    targets: tuple[str, ...] = ()
    witnesses: tuple[str, ...] = ()
    aside: bool = False
    when: str = ""
    dies: tuple[str, ...] = ()  # who died by it (an act): a fact the world changed


@dataclass
class World:
    """Places, agents and the event log; threads are the talk per place."""

    name: str
    places: list[str] = field(default_factory=list)
    agents: dict[str, Agent] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    threads: dict[str, list[Event]] = field(default_factory=dict)
    _arrivals: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, agents: list[str], places: list[str]) -> "World":
        """A world with every agent off stage."""
        w = cls(name=name, places=list(places))
        for a in agents:
            w.agents[a] = Agent(a)
        return w

    def fork(self) -> "World":
        """An independent copy to run on from here (events are immutable and shared)."""
        w = World(self.name, list(self.places))
        w.agents = {n: Agent(a.name, a.place, a.alive) for n, a in self.agents.items()}
        w.events = list(self.events)
        w.threads = {p: list(t) for p, t in self.threads.items()}
        w._arrivals = {p: list(a) for p, a in self._arrivals.items()}
        return w

    def add_agent(self, name: str) -> Agent:
        """The agent called ``name``, created off stage when new."""
        if name not in self.agents:
            self.agents[name] = Agent(name)
        return self.agents[name]

    def add_place(self, place: str) -> None:
        """Adds ``place`` if it is new."""
        if place not in self.places:
            self.places.append(place)

    def present(self, place: str | None) -> list[str]:
        """Living agents at ``place``, in order of arrival."""
        if place is None:
            return []
        return [a for a in self._arrivals.get(place, []) if self.agents[a].alive]

    def awake(self) -> list[str]:
        """Every awake agent, in the world's agent order (deterministic)."""
        return [n for n, a in self.agents.items() if a.awake]

    def move(self, name: str, place: str | None) -> None:
        """Put ``name`` at ``place`` (``None``: off stage)."""
        agent = self.add_agent(name)
        if agent.place is not None:
            self._arrivals[agent.place].remove(name)
        agent.place = place
        if place is not None:
            self.add_place(place)
            self._arrivals.setdefault(place, []).append(name)

    def kill(self, name: str) -> None:
        """``name`` dies: it stays where it fell but never steps again."""
        self.add_agent(name).alive = False

    def clear_stage(self) -> None:
        """Everyone goes off stage (a new scene)."""
        for name, agent in self.agents.items():
            if agent.place is not None:
                self.move(name, None)

    def record(self, event: Event) -> Event:
        """Appends ``event`` to the world's history and returns it."""
        self.events.append(event)
        if event.kind == "say":
            self.threads.setdefault(event.place, []).append(event)
        return event
