"""Plans fenced on memories: an agent's plan to go where a memory says someone is.

When an agent seeks someone absent (its goal ``find Laertes``) and a state
record it recalled says that person is elsewhere (``Laertes, as of round 7:
Laertes is in the chapel.``, `world_facts`), it derives a plan in the
store's Planfence lineage (``go to the chapel to meet Laertes``) from its
goal and that memory (``fence.derive(..., memories=[record id])``). It
carries the plan out the next round, before anything else: the move there
(a commitment: the plan is not dropped when the goal changes meanwhile; the
fence is what checks it).

With the fence on, the plan is guarded before the move. The fence judges a
memory by the record: a plan is stale once any owner's statement superseded
its memory, whether or not the agent learned of it (per-owner validity
decides what the agent recalls, not what the fence reports). A stale plan is
replanned once from what the agent recalls now (a current state record of
that person, which must itself be the newest of its chain) or blocked, and
the agent then decides as it would without a plan. A memory already
superseded when the plan is made cannot be linked: the fence refuses the
plan (``refused``). With the fence off (the control) no plan goes through
the fence and the agent moves on the plan as made.

`PlanCounts` counts by the store's own versions, not by the fence: a plan
is *stale* for its agent when the agent holds a later record of its
memory's chain (`superseded_for`: it learned of the change), and
*outdated* when any later record exists (someone learned of it). Both are
counted when the plan is carried out, and again for the moves made on it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .accounts import in_sentence
from .actions import Action
from .agent_policy import AgentView, RecallNeed
from .sim_embedder import CachedEmbedder
from .stm import GOAL_FIND
from .world import World
from .world_facts import FactBook

__all__ = ["Plan", "PlanCounts", "PlanPolicy", "superseded_for"]

_MOVE_ORDER = 1_000_000.0  # as the memory policy's moves: moves to one place in a round are one entrance


@dataclass(frozen=True)
class Plan:
    """Go to ``place`` to meet ``person``: derived in ``round`` from state record ``memory``."""

    agent: str
    person: str
    place: str
    memory: int
    round: int

    @property
    def key(self) -> str:
        """The plan's key in the lineage."""
        return f"{self.agent}/plan/meet {self.person}"

    @property
    def text(self) -> str:
        """What the plan says."""
        return f"go to {in_sentence(self.place)} to meet {self.person}"


@dataclass
class PlanCounts:
    """What the plans came to (module docstring). ``caught``: guards that
    found the plan stale; ``replanned``: of those, replans that made it
    current; ``blocked``: guards that blocked the move; ``refused``: plans the
    fence would not derive (their memory was superseded already)."""

    plans: int = 0
    refused: int = 0
    carried_out: int = 0
    stale_plans: int = 0
    outdated_plans: int = 0
    stale_actions: int = 0
    outdated_actions: int = 0
    caught: int = 0
    replanned: int = 0
    blocked: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counts by name."""
        return asdict(self)


class PlanPolicy:
    """``inner`` (the memory policy) with plans fenced on the memories they came from."""

    def __init__(
        self,
        inner: Any,
        book: FactBook,
        store: Any,
        backend: Any,
        embed: CachedEmbedder,
        *,
        fence: bool = True,
        k: int = 5,
    ) -> None:
        self.inner, self.book, self.store, self.backend, self.embed = inner, book, store, backend, embed
        self.fence, self.k = fence, k
        self.plans: dict[str, Plan] = {}
        self.counts = PlanCounts()

    def begin_round(self, world: World, round: int) -> set[str] | None:
        """The inner policy's."""
        woke: set[str] | None = self.inner.begin_round(world, round)
        return woke

    def recall_need(self, agent: str, view: AgentView) -> RecallNeed | None:
        """The inner policy's (a plan carried out needs no recall before it: the guard recalls)."""
        ask = getattr(self.inner, "recall_need", None)
        need = ask(agent, view) if callable(ask) else None
        return need if isinstance(need, RecallNeed) else None

    def decide(self, agent: str, view: AgentView) -> Action:
        """Carry out the plan made last round, else decide as the inner policy; then plan from what it holds."""
        plan = self.plans.pop(agent, None)
        act = self._carry_out(plan, view) if plan is not None and plan.round < view.round else None
        if act is None:
            act = self.inner.decide(agent, view)
        if agent not in self.plans and act.kind != "move":  # one on its way plans when it gets there
            self._plan(agent, view)
        return act

    # ------------------------------------------------------------ plans

    def _state_row(self, person: str, rows: list[tuple[str, int]], here: str | None) -> tuple[str, int] | None:
        """The first of ``rows`` (text, id) that is a state record putting ``person`` somewhere else."""
        for text, rid in rows:
            st = self.book.state_of(text)
            if st is not None and st.subject == person and st.at is not None and st.at != here:
                return st.at, rid
        return None

    def _derive(self, agent: str, person: str, place: str, memory: int, round: int) -> Plan:
        """The plan, written to the lineage when the fence is on (``ValueError``: memory superseded)."""
        plan = Plan(agent, person, place, memory, round)
        if not self.fence:
            return plan
        fence = self.store.fence
        goal = f"{agent}/goal"
        version = fence.publish(goal, agent, f"find {person}")
        fence.derive(plan.key, agent, plan.text, {goal: version}, memories=[memory])
        return plan

    def _plan(self, agent: str, view: AgentView) -> None:
        """A plan to meet the one it seeks, from the newest held state record that puts them elsewhere."""
        goal = view.stm.goals.peek() or ""
        person = goal[len(GOAL_FIND) :] if goal.startswith(GOAL_FIND) else ""
        if not person or person in view.present:
            return
        held = sorted(view.stm.recalled, key=lambda r: -r.made)
        found = self._state_row(person, [(r.text, r.id) for r in held], view.place)
        if found is None:
            return
        place, rid = found
        try:
            self.plans[agent] = self._derive(agent, person, place, rid, view.round)
        except ValueError:  # the memory is no longer the newest of its chain: no plan may link it
            self.counts.refused += 1
            return
        self.counts.plans += 1

    def _recall_state(self, agent: str, person: str, here: str | None) -> tuple[str, int] | None:
        """What ``agent`` recalls now of where ``person`` is (current records only)."""
        (q,) = self.embed([f"Where is {person}?"])
        mems = self.backend.recall(agent, q, self.k)
        return self._state_row(person, [(str(m.text), int(m.id)) for m in mems], here)

    def _carry_out(self, plan: Plan, view: AgentView) -> Action | None:
        """The plan's move, guarded when the fence is on; ``None``: no move on it."""
        agent = plan.agent
        if plan.place == view.place:
            return None  # it went there already: nothing left to carry out
        self.counts.carried_out += 1
        self.counts.stale_plans += self._stale(plan)
        self.counts.outdated_plans += self._outdated(plan)
        if self.fence:
            got = self._guard(plan, view)
            if got is None:
                return None
            plan = got
        if plan.place == view.place:
            return None
        self.counts.stale_actions += self._stale(plan)
        self.counts.outdated_actions += self._outdated(plan)
        return Action("move", agent, place=plan.place, order=_MOVE_ORDER + view.places.index(plan.place))

    def _stale(self, plan: Plan) -> int:
        """1 when the plan's memory is superseded for its agent (it learned of the change)."""
        return int(superseded_for(self.store, plan.memory, plan.agent))

    def _outdated(self, plan: Plan) -> int:
        """1 when any later record of the plan's memory exists (someone learned of the change)."""
        return int(self.store.get(plan.memory).superseded_by is not None)

    def _guard(self, plan: Plan, view: AgentView) -> Plan | None:
        """The fence's guard: the plan as it stands, replanned once, or ``None`` when blocked."""
        from agentsensus import StalePlanError  # the engine's, imported with the store

        made: list[Plan] = []

        def replan(_check: Any) -> None:
            self.counts.caught += 1
            found = self._recall_state(plan.agent, plan.person, None)  # here too: then no move is needed
            if found is None:
                raise LookupError(f"{plan.agent} recalls no place where {plan.person} is")
            made.append(self._derive(plan.agent, plan.person, found[0], found[1], view.round))

        try:
            self.store.fence.guard(plan.key, replan=replan)
        except StalePlanError:
            self.counts.blocked += 1
            return None
        if made:
            self.counts.replanned += 1
            return made[-1]
        return plan


def superseded_for(store: Any, rid: int, owner: str) -> bool:
    """Whether record ``rid`` is superseded for ``owner``: it holds a later record of its chain."""
    chain = [int(m.id) for m in store.chain(rid)]
    later = chain[chain.index(rid) + 1 :] if rid in chain else []
    return any(owner in store.get(x).owners for x in later)
