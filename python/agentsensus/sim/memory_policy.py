"""The default policy: agents act from what they remember. No model, seeded.

Each round an awake agent has recalled up to ``k`` memories with what it has
in mind (the kernel asks its backend with the last thing it heard, else its
goal, else its place). It then picks one of the six actions:

- ``say``: when someone is with it and recall returned a memory that not
  everyone present has heard from it or, as far as it remembers, seen happen
  with it (a newcomer, say), it retells that
  memory (its core, with its time; "I" becomes its own name) to whoever the
  memory names, else to someone present. News goes first: of the memories
  recalled, the most recent by the time it names. What it told whom is what
  its short-term cache still holds (a say's entry names who heard it), so
  the cache policy (fifo, relevance, hybrid) changes what it says next.
- ``act_on``: now and then, it takes aside someone a memory names who is
  present, about what the memory concerns.
- ``move``: when alone, often when it has no news left to tell here, and
  now and then otherwise, it goes to the place named by the most recent of
  its recalled memories that names another place (where it last heard of
  someone going, so where company is likeliest), else to another place of
  the world; there others may not have heard its news.
- ``read_thread``: when much was said where it is since it last read.
- ``ponder``: when it has nothing to tell, it asks its memory about what it
  last heard or its goal.
- ``observe``: otherwise.

So what it says, to whom, and where it goes come from what recall returned:
another backend recalls other rows, and the story goes elsewhere. Every
choice is drawn from a random stream keyed by (seed, agent, round), so a run
is reproducible and independent of the order agents are asked in.
"""

from __future__ import annotations

import random
import re
import zlib
from functools import lru_cache

from .accounts import has_words, in_sentence
from .actions import HEARD_BY, Action
from .agent_policy import AgentView
from .wording import TIME, read
from .words import content_words
from .world import World

__all__ = ["MemoryPolicy", "retell"]

_FIRST_PERSON = {"I": "{me}", "me": "{me}", "my": "{me}'s", "myself": "{me}", "Me": "{me}", "My": "{me}'s"}
_PERSON = re.compile(r"\b(I|me|my|myself|Me|My)\b")
_QUOTED = re.compile(r'"[^"]*"')
# Who a frame says spoke: "Hamlet told me", "I heard Hamlet say", "Hamlet and I said to ourselves".
_SPEAKER = re.compile(r"(?:I heard |I watched )?(.+?)\s+(?:told|said|say|tell)\b")
_MOVE_ORDER = 1_000_000.0  # moves to one place in one round are one joint entrance


@lru_cache(maxsize=1 << 17)
def retell(memory: str, me: str) -> str:
    """What ``me`` says to retell ``memory``: its core, with its time and,
    for something said, who it thinks said it ("I" in its memory is itself)."""
    r = read(memory)
    core = r.core.strip()
    if r.quoted:
        q = _QUOTED.search(memory)
        inner = TIME.sub("", q.group(0).strip('"')).strip(" ,") if q else ""
        # A retold report names its first speaker inside the quotation: that one said it.
        frame = (
            inner.split(": ", 1)[0]
            if ": " in inner.rstrip(": ")
            else TIME.sub("", _QUOTED.sub(" ", memory)).strip(" ,.:")
        )
        m = _SPEAKER.match(frame)
        speaker = _PERSON.sub(me, m.group(1)) if m else "someone"
        core = f"{speaker} said: {core}"
    else:
        core = _PERSON.sub(lambda m: _FIRST_PERSON[m.group(1)].format(me=me), core)
    if r.time:
        first = core.split(" ", 1)[0]
        lead = core[:1].lower() + core[1:] if first in ("The", "A", "An", "This", "It", "Someone") else core
        core = f"In {r.time[0]} {r.time[1]}, {lead}"
    core = core[:1].upper() + core[1:]
    return core if core.endswith((".", "!", "?")) else core + "."


def _recency(memory: str) -> tuple[int, int]:
    """(clock, tick) of what a memory names: rounds come after the source's scenes."""
    t = read(memory).time
    if t is None:
        return (0, 0)
    return (2 if t[0] == "round" else 1, t[1])


class MemoryPolicy:
    """Deterministic, seeded agents that act from memory (module docstring)."""

    def __init__(
        self, seed: int = 0, *, talk: float = 0.8, act: float = 0.08, wander: float = 0.12, restless: float = 0.3
    ) -> None:
        self.seed = int(seed)
        self.talk, self.act, self.wander, self.restless = talk, act, wander, restless
        self.world: World | None = None

    def __repr__(self) -> str:
        return f"MemoryPolicy(seed={self.seed})"

    def begin_round(self, world: World, round: int) -> set[str]:
        """Wakes no one: the awake are whoever stands somewhere."""
        self.world = world
        return set()

    def _rng(self, agent: str, round: int) -> random.Random:
        return random.Random(zlib.crc32(repr((self.seed, agent, round)).encode("utf-8")))

    def decide(self, agent: str, view: AgentView) -> Action:
        """One action for ``agent`` from its view (see the module docstring)."""
        rng = self._rng(agent, view.round)
        # What it told whom, as far as its short-term cache still holds.
        told: dict[str, set[str]] = {}
        for e in view.stm.cache.entries:
            if e.action.startswith("say "):
                who = e.result[len(HEARD_BY) :].split(", ") if e.result.startswith(HEARD_BY) else []
                told.setdefault(e.action[4:], set()).update(who)
        heard = set(view.stm.heard)
        company = set(view.present)
        fresh = []
        for i, m in enumerate(view.memories):
            line = retell(m, agent)
            # Worth telling when someone here has neither heard it from this agent nor, as
            # far as it remembers, seen it happen with it (a newcomer, say).
            when = read(m).time
            knew = told.get(line, set()) | (
                view.stm.seen_with.get(when[1], set()) if when and when[0] == "round" else set()
            )
            if has_words(line) and line not in heard and not company <= knew:
                fresh.append((i, m, line))
        # News first: the most recent thing recalled (by the time it names) is told before old lore.
        fresh.sort(key=lambda f: (_recency(f[1]), -f[0]), reverse=True)
        if view.unread >= 3 and rng.random() < 0.3:
            return Action("read_thread", agent)
        news = bool(fresh) and _recency(fresh[0][1])[0] == 2
        # Its news told here (or none to tell), an agent often moves on to find new listeners.
        if view.present and fresh and not news and view.places and rng.random() < self.restless:
            dest = self._destination(view, rng)
            if dest is not None:
                return Action("move", agent, place=dest, order=_MOVE_ORDER + view.places.index(dest))
        if view.present and fresh:
            i, m, line = fresh[0]
            named = [p for p in view.present if p in m]
            to = (named[0],) if named else (view.present[rng.randrange(len(view.present))],)
            if named and rng.random() < self.act:
                topic = sorted(content_words(read(m).core))[:1]
                about = f" about {topic[0]}" if topic else ""
                return Action("act_on", agent, f"{agent} takes {named[0]} aside{about}.", to=(named[0],), basis=i)
            if rng.random() < self.talk:
                return Action("say", agent, line, to=to, place=view.place, basis=i)
        # Alone, or with nothing left to tell here: go and find someone to tell.
        if view.places and (not view.present or rng.random() < (self.restless if not fresh else self.wander)):
            dest = self._destination(view, rng)
            if dest is not None:
                return Action("move", agent, place=dest, order=_MOVE_ORDER + view.places.index(dest))
        if not fresh:
            question = view.stm.heard[-1] if view.stm.heard else view.stm.goals.peek()
            if question:
                return Action("ponder", agent, f"What do I know about this: {read(question).core}")
        return Action("observe", agent)

    def _destination(self, view: AgentView, rng: random.Random) -> str | None:
        others = [p for p in view.places if p != view.place]
        if not others:
            return None
        # Where it last heard of someone going is where company is likeliest: the most
        # recent memory that names another place (by the time it names) wins.
        for m in sorted(view.memories, key=_recency, reverse=True):
            low = m.lower()
            for p in others:
                if in_sentence(p).lower() in low:
                    return p
        return others[rng.randrange(len(others))]
