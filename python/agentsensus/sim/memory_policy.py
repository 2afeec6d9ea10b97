"""The default policy: agents act from what they hold in memory. No model, seeded.

Each agent seeks people (its goals: ``find Laertes``, then the next one it
has most to do with, set from the source by `seek_lists`),
and talks with whoever it meets. Its decision reads its short-term memory
(`ShortTermMemory`): the rows its recalls returned, where it
last saw or read of someone, what it read or observed, the questions asked
of it. It recalls from long-term memory only when that lacks what the
decision needs (`MemoryPolicy.recall_need`):

- a question was asked of it about someone it knows nothing of;
- it seeks someone absent and knows of no place to look;
- it has company and nothing to tell them.

Then, in order (each choice drawn from a stream keyed by (seed, agent, round)):

1. ``say`` an **answer** to a question asked of it, when the asker is here;
2. ``read_thread`` when much was said here since it last read; ``observe``
   after arriving somewhere;
3. seeking someone who is here: talk to them (below); absent, with a place
   to look: ``say`` its **intention** to those here, then ``move`` there;
   absent, with no place: ``say`` a **question** about them to someone here;
4. with company: talk: a **retelling** of the newest row it holds that
   someone here has not heard from it (nor, as far as it remembers, seen
   happen with it), an **inference** joining two rows that name one third
   person, or a **reaction** to what it read or observed; now and then
   ``act_on``: it takes someone aside;
5. alone, or restless: ``move`` to the place its newest row names, else
   another place; else ``ponder`` (a recall of its own choosing) or ``observe``.

The statements are composed by `utterances`. So what it says, whom it
looks for and where it goes come from what recall returned: another backend
recalls other rows, and with recall switched off (the ``recall_off``
control) agents neither answer, infer nor retell.
"""

from __future__ import annotations

import random
import zlib

from .accounts import has_words, in_sentence
from .actions import HEARD_BY, Action
from .agent_policy import AgentView, RecallNeed
from .people import People, people_of
from .stm import GOAL_FIND, Question
from .utterances import answer, composed, inference, intention, question, reaction, retell
from .world import World

__all__ = ["MemoryPolicy", "retell"]

_MOVE_ORDER = 1_000_000.0  # moves to one place in one round are one joint entrance


class MemoryPolicy:
    """Deterministic, seeded agents that act from memory (module docstring)."""

    def __init__(
        self,
        seed: int = 0,
        *,
        talk: float = 0.85,
        act: float = 0.06,
        read: float = 0.35,
        look: float = 0.5,
        restless: float = 0.3,
        announce: float = 0.5,
        ask: float = 0.6,
    ) -> None:
        self.seed = int(seed)
        self.talk, self.act, self.read, self.look = talk, act, read, look
        self.restless, self.announce, self.ask = restless, announce, ask
        self.world: World | None = None

    def __repr__(self) -> str:
        return f"MemoryPolicy(seed={self.seed})"

    def begin_round(self, world: World, round: int) -> set[str]:
        """Wakes no one: the awake are whoever stands somewhere."""
        self.world = world
        return set()

    def _rng(self, agent: str, round: int) -> random.Random:
        return random.Random(zlib.crc32(repr((self.seed, agent, round)).encode("utf-8")))

    # ------------------------------------------------------------ what it holds

    @staticmethod
    def _target(view: AgentView) -> str | None:
        goal = view.stm.goals.peek() or ""
        return goal[len(GOAL_FIND) :] if goal.startswith(GOAL_FIND) else None

    @staticmethod
    def _question(view: AgentView) -> Question | None:
        """The newest open question whose asker is here."""
        return next((q for q in reversed(view.stm.questions) if q.asker in view.present), None)

    @staticmethod
    def _newest(view: AgentView) -> list[int]:
        """Indexes of the held rows, newest first (by the round each row was made in)."""
        rows = view.stm.recalled
        return sorted(range(len(rows)), key=lambda i: (-rows[i].made, i))

    def _about(self, view: AgentView, person: str, people: People) -> int | None:
        """The newest held row that names ``person`` and reports something seen or said in the play."""
        rows = view.stm.recalled
        return next(
            (i for i in self._newest(view) if person in people(rows[i].text) and not composed(rows[i].text)), None
        )

    def _place_of(self, view: AgentView, person: str, people: People) -> str | None:
        """Where ``person`` was: last seen or read of, else the newest held row naming it and a place."""
        seen = view.stm.whereabouts.get(person)
        if seen is not None:
            return seen[0]
        for i in self._newest(view):
            text = view.stm.recalled[i].text
            if person in people(text):
                low = text.lower()
                for p in view.places:
                    if in_sentence(p).lower() in low:
                        return p
        return None

    @staticmethod
    def _told(view: AgentView) -> dict[str, set[str]]:
        """What it told whom, as far as its short-term cache still holds."""
        told: dict[str, set[str]] = {}
        for e in view.stm.cache.entries:
            if e.action.startswith("say "):
                who = e.result[len(HEARD_BY) :].split(", ") if e.result.startswith(HEARD_BY) else []
                told.setdefault(e.action[4:], set()).update(who)
        return told

    def _fresh(self, agent: str, view: AgentView, told: dict[str, set[str]]) -> list[tuple[int, str]]:
        """Held rows worth retelling here, newest first: someone here has neither
        heard it from this agent nor, as far as it remembers, seen it happen with it."""
        company = set(view.present)
        heard = set(view.stm.heard)
        out = []
        for i in self._newest(view):
            row = view.stm.recalled[i]
            line = retell(row.text, agent)
            knew = told.get(line, set()) | view.stm.seen_with.get(row.made, set())
            if has_words(line) and line not in heard and not company <= knew:
                out.append((i, line))
        return out

    def _pair(self, view: AgentView, people: People, me: str) -> tuple[str, int, int] | None:
        """Two held rows naming one third person (newest first), neither itself a composed
        statement: material for an inference."""
        newest = [i for i in self._newest(view) if not composed(view.stm.recalled[i].text)]
        for a_pos, i in enumerate(newest):
            named_i = people(view.stm.recalled[i].text) - {me}
            for j in newest[a_pos + 1 :]:
                if view.stm.recalled[j].text == view.stm.recalled[i].text:
                    continue
                common = sorted(named_i & people(view.stm.recalled[j].text))
                if common:
                    return common[0], i, j
        return None

    def recall_need(self, agent: str, view: AgentView) -> RecallNeed | None:
        """What the decision lacks from long-term memory (module docstring), or ``None``."""
        people = people_of(tuple(view.cast))
        q = self._question(view)
        if q is not None:
            if self._about(view, q.subject, people) is None and q.subject not in view.stm.whereabouts:
                return RecallNeed(f"Where is {q.subject}? What of {q.subject}?", q.subject)
            return None
        target = self._target(view)
        if target and target not in view.present and self._place_of(view, target, people) is None:
            return RecallNeed(f"Where is {target}?", target)
        told = self._told(view)
        if view.present and not self._fresh(agent, view, told) and not view.stm.learned:
            return RecallNeed(view.stm.focus_text() or agent)
        return None

    # ------------------------------------------------------------ the decision

    def decide(self, agent: str, view: AgentView) -> Action:
        """One action for ``agent`` from its view (see the module docstring)."""
        rng = self._rng(agent, view.round)
        people = people_of(tuple(view.cast))
        q = self._question(view)
        if q is not None:
            return self._answer(agent, view, q, people)
        if view.unread >= 2 and rng.random() < self.read:
            return Action("read_thread", agent)
        if view.stm.status.get("arrived") == view.round - 1 and rng.random() < self.look:
            return Action("observe", agent)
        told = self._told(view)
        target = self._target(view)
        if target is not None:
            if target in view.present:
                act = self._talk(agent, view, rng, people, told, target)
                if act is not None:
                    return act
            else:
                act = self._seek(agent, view, rng, people, told, target)
                if act is not None:
                    return act
        if view.present:
            act = self._talk(agent, view, rng, people, told, None)
            if act is not None:
                return act
        if view.places and (not view.present or rng.random() < self.restless):
            dest = self._destination(view, rng)
            if dest is not None:
                return self._move(agent, view, dest)
        if not view.present:
            about = target or (in_sentence(view.place) if view.place else agent)
            return Action("ponder", agent, f"What do I know of {about}?", subject=target or "")
        return Action("observe", agent)

    def _answer(self, agent: str, view: AgentView, q: Question, people: People) -> Action:
        place = self._place_of(view, q.subject, people)
        i = None if place is not None else self._about(view, q.subject, people)
        text = answer(q.subject, place, view.memories[i] if i is not None else None, agent)
        return Action("say", agent, text, to=(q.asker,), place=view.place, basis=i, form="answer", subject=q.subject)

    def _seek(
        self, agent: str, view: AgentView, rng: random.Random, people: People, told: dict[str, set[str]], target: str
    ) -> Action | None:
        """Seeking someone absent: announce and go where it was, or ask after it."""
        dest = self._place_of(view, target, people)
        if dest is not None and dest != view.place and dest in view.places:
            line = intention(dest, target)
            if view.present and not set(view.present) <= told.get(line, set()) and rng.random() < self.announce:
                return Action("say", agent, line, place=view.place, form="intention", subject=target)
            return self._move(agent, view, dest)
        if view.present and rng.random() < self.ask:
            listener = view.present[rng.randrange(len(view.present))]
            line = question(target, where=rng.random() < 0.5)
            if listener not in told.get(line, set()):
                return Action("say", agent, line, to=(listener,), place=view.place, form="question", subject=target)
        return None

    def _talk(
        self,
        agent: str,
        view: AgentView,
        rng: random.Random,
        people: People,
        told: dict[str, set[str]],
        to: str | None,
    ) -> Action | None:
        """Something new to say to those here (or to ``to``), from what it holds."""
        fresh = self._fresh(agent, view, told)
        pair = self._pair(view, people, agent)
        learned = [x for x in view.stm.learned if not composed(x[1])]
        forms = [f for f, ok in (("retelling", fresh), ("inference", pair), ("reaction", learned)) if ok]
        if not forms or rng.random() >= self.talk:
            return None
        form = forms[rng.randrange(len(forms))]
        basis: int | None = None
        if form == "retelling":
            basis, text = fresh[0]
        elif form == "inference" and pair is not None:
            person, i, j = pair
            basis, text = i, inference(person, view.memories[i], view.memories[j], agent)
        else:
            text = reaction(learned[-1][1], agent)
        company = set(view.present)
        if company <= told.get(text, set()):
            return None  # told here already
        named = [p for p in view.present if p in people(text)]
        listener = to or (named[0] if named else view.present[rng.randrange(len(view.present))])
        if rng.random() < self.act and listener in view.present:
            topic = sorted(people(text) - {agent, listener})[:1]
            about = f" about {topic[0]}" if topic else ""
            return Action("act_on", agent, f"{agent} takes {listener} aside{about}.", to=(listener,), basis=basis)
        return Action("say", agent, text, to=(listener,), place=view.place, basis=basis, form=form)

    def _move(self, agent: str, view: AgentView, dest: str) -> Action:
        return Action("move", agent, place=dest, order=_MOVE_ORDER + view.places.index(dest))

    def _destination(self, view: AgentView, rng: random.Random) -> str | None:
        others = [p for p in view.places if p != view.place]
        if not others:
            return None
        # Where its newest row names another place is where something happens.
        for i in self._newest(view):
            low = view.stm.recalled[i].text.lower()
            for p in others:
                if in_sentence(p).lower() in low:
                    return p
        return others[rng.randrange(len(others))]
