"""The round-barrier kernel.

Round 0 sediments the source: its events, batch by batch, become each
witness's account, deposited through the backend's own ``remember``.

Each round after, every awake agent decides through its short-term memory:

1. The policy says what the decision lacks (``recall_need``); only then does
   the kernel recall from long-term memory, and the rows go into the agent's
   short-term memory (``ShortTermMemory.recalled``). A ``ponder`` action is a
   recall too. Nothing else reads long-term memory.
2. The policy picks one action from what the short-term memory holds.
3. At the barrier the world applies all actions in a fixed order; the
   reading actions (``read_thread``, ``observe``) then return what is new to
   their reader.
4. Each agent deposits only the results of its own action, through its
   short-term memory: what it said or did (say, act_on, move), what
   ``read_thread`` returned to it, what ``observe`` showed it. A bystander
   who took no reading action deposits nothing: it perceived the event (its
   short-term memory knows who it saw where, and what was said to it), but
   only an action of its own writes to long-term memory. Two agents share a
   record only when each deposited an equivalent statement from an action
   of its own.

Nothing an agent does in a round is seen by another agent before the barrier.

Provenance stays here: the backend receives plain strings and vectors; the
`Ledger` learns what each statement reports and where
the backend put it.
"""

from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .accounts import account
from .actions import Action, apply_actions
from .agent_policy import AgentView, Policy, RecallNeed
from .backend import MemoryBackend
from .provenance import Fact, Ledger
from .sim_embedder import CachedEmbedder
from .stm import GOAL_FIND, ActionCache, CacheEntry, Question, Recalled, ShortTermMemory
from .variation import Variation
from .world import Event, World
from .world_facts import FactBook

__all__ = ["RoundLog", "Said", "RecallCall", "Deposit", "Kernel"]

#: How many new items one reading action returns at most.
READ_ITEMS = 5


@dataclass(frozen=True)
class Said:
    """One thing an agent said in a round, and the held row it drew on."""

    agent: str
    text: str
    basis: int | None  # row id of the memory it drew on (``None``: none)
    seq: int  # the say event
    form: str = ""  # utterances.FORMS, or "" (a model's or the source's say)


@dataclass(frozen=True)
class RecallCall:
    """One recall: who, why (``stm``: the decision lacked something;
    ``ponder``: the action), about whom, and the rows it returned."""

    agent: str
    kind: str
    subject: str | None
    hits: tuple[str, ...]
    edges: tuple[str, ...]


@dataclass(frozen=True)
class Deposit:
    """One agent's action in a round and what its deposit stored: a line of
    ``events.jsonl``. ``deposited``: the row ids ``remember`` returned (empty
    when the action deposits nothing)."""

    round: int
    agent: str
    action: str
    deposited: tuple[int, ...]
    merged: tuple[bool, ...]


@dataclass
class RoundLog:
    """What one round did, and what it cost."""

    round: int
    events: list[Event] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    deposits: int = 0
    statements: int = 0
    records: int = 0
    remember_ms: list[float] = field(default_factory=list)  # per deposit, amortised over the round's batch
    recall_ms: list[float] = field(default_factory=list)  # per recall call
    recalls: int = 0
    hits: int = 0  # rows recalls returned as nearest neighbours
    expanded: int = 0  # recalls that returned at least one linked row
    edge_rows: int = 0  # linked rows those recalls returned
    said: list[Said] = field(default_factory=list)
    recall_calls: list[RecallCall] = field(default_factory=list)
    acted: list[Deposit] = field(default_factory=list)


# A deposit before it is stored: owner, statements, their facts, and each statement's event's witnesses.
_Pending = tuple[str, list[str], list[Fact], list[frozenset[str]]]


class Kernel:
    """Steps a world with a policy, a memory backend and an embedder."""

    def __init__(
        self,
        world: World,
        policy: Policy,
        backend: MemoryBackend,
        embed: CachedEmbedder,
        *,
        k: int = 5,
        cache_policy: str = "hybrid",
        cache_capacity: int = 8,
        variation: Variation | None = None,
        ledger: Ledger | None = None,
        warn: Callable[[str], None] | None = None,
        facts: FactBook | None = None,
    ) -> None:
        self.world, self.policy, self.backend, self.embed = world, policy, backend, embed
        self.k = k
        self.variation = variation if variation is not None else Variation()
        self.ledger = ledger if ledger is not None else Ledger()
        self.warn = warn if warn is not None else (lambda msg: print(f"warning: {msg}", file=sys.stderr))
        self._cache_args = (cache_capacity, cache_policy)
        self.stm: dict[str, ShortTermMemory] = {}
        self.round = 0
        self.logs: list[RoundLog] = []
        self.stopped = ""  # why the run ended early ("" while it runs)
        self._read: dict[str, int] = {}  # agent -> thread length it has read
        self._observed: dict[str, int] = {}  # agent -> world events it has looked over
        self._held: dict[str, list[Recalled]] = {}  # agent -> the rows its decision could draw on
        self._witnessed = "witnesses" in inspect.signature(backend.remember).parameters
        # With a fact book, whoever learns of a change of state deposits the new state (world_facts).
        self.facts = facts
        for a in world.agents:
            self.memory_of(a)

    def memory_of(self, agent: str) -> ShortTermMemory:
        """The agent's short-term memory (created on first need)."""
        if agent not in self.stm:
            self.stm[agent] = ShortTermMemory(cache=ActionCache(*self._cache_args))
        return self.stm[agent]

    def start_after_source(self) -> None:
        """What was said and done in the source is behind everyone: only new talk is unread."""
        w = self.world
        self._read = {a: len(w.threads.get(ag.place or "", [])) for a, ag in w.agents.items()}
        self._observed = {a: len(w.events) for a in w.agents}

    def set_goals(self, seek: dict[str, list[str]]) -> None:
        """Each agent seeks the people of ``seek[agent]`` in turn (``find <person>`` goals)."""
        for agent, people in seek.items():
            stm = self.memory_of(agent)
            stm.associates = list(people)
            if people:
                stm.goals.push(GOAL_FIND + people[0])

    def _records(self) -> int:
        count = getattr(self.backend, "records", None)
        return int(count()) if callable(count) else int(self.backend.stats()["records"])

    def _accounts_of(self, owner: str, events: Iterable[Event]) -> _Pending | None:
        """``owner``'s own account of ``events`` as one deposit (``None`` when it says nothing)."""
        texts: list[str] = []
        facts: list[Fact] = []
        seen: list[frozenset[str]] = []
        for ev in events:
            for text, clause in account(ev, owner, self.variation):
                texts.append(text)
                facts.append(self.ledger.fact(ev.seq, clause))
                seen.append(frozenset(ev.witnesses) | {owner})
        return (owner, texts, facts, seen) if texts else None

    def _witness_accounts(self, events: Sequence[Event]) -> list[_Pending]:
        """Every witness's account of ``events`` (round 0: one deposit per witness)."""
        self.ledger.add_events(events)
        per_witness: dict[str, list[Event]] = {}
        for ev in events:
            for w in ev.witnesses:
                per_witness.setdefault(w, []).append(ev)
        out = [self._accounts_of(w, evs) for w, evs in per_witness.items()]
        return [p for p in out if p is not None]  # no empty deposit reaches a backend

    def _remember(self, pending: list[_Pending], log: RoundLog) -> list[tuple[list[int], list[bool]]]:
        """One ``remember`` call for ``pending``; the ledger learns where each statement went."""
        if not pending:
            return []
        vecs = self.embed([s for _, stmts, _, _ in pending for s in stmts])
        items, i = [], 0
        for w, stmts, _, _ in pending:
            items.append((w, list(stmts), vecs[i : i + len(stmts)]))
            i += len(stmts)
        t0 = time.perf_counter()
        if self._witnessed:
            stored = list(self.backend.remember(items, log.round, witnesses=[p[3] for p in pending]))
        else:  # a backend written before the access facts were offered
            stored = list(self.backend.remember(items, log.round))
        ms = (time.perf_counter() - t0) * 1000.0
        log.remember_ms.extend([ms / len(items)] * len(items))
        log.deposits += len(items)
        log.statements += sum(len(s) for _, s, _ in items)
        for (_, _, facts, _), (ids, merged) in zip(pending, stored):
            self.ledger.deposited(facts, ids, merged, log.round)
        return [(list(ids), list(merged)) for ids, merged in stored]

    def sediment(
        self, batches: Iterable[Sequence[Event]], on_batch: Callable[[int], None] | None = None, *, per_call: int = 512
    ) -> RoundLog:
        """Round 0: every batch of source events becomes its witnesses' deposits.

        Deposits stay one per witness and batch; up to ``per_call`` of them go
        to the backend in one ``remember`` (one ``deposit_many``), in order.
        """
        log = RoundLog(0)
        pending: list[_Pending] = []
        n = 0
        for n, events in enumerate(batches, 1):
            for ev in events:
                for a in ev.witnesses:
                    self.memory_of(a)
            pending.extend(self._witness_accounts(events))
            log.events.extend(events)
            if len(pending) >= per_call:
                self._remember(pending, log)
                pending = []
                if on_batch is not None:
                    on_batch(n)
        self._remember(pending, log)
        if on_batch is not None:
            on_batch(n)
        log.records = self._records()
        self.logs.append(log)
        self.start_after_source()
        return log

    def learn_source_facts(self, batches: Iterable[Sequence[Event]]) -> int:
        """Round 0 of a run with a fact book: every change of state in the source
        (an entrance, an exit, a death) becomes its witnesses' statement of the
        new state, batch by batch in the source's order, so each later state
        supersedes the earlier one for those who learned it. Returns how many."""
        if self.facts is None:
            raise ValueError("learn_source_facts needs a kernel made with facts=FactBook()")
        log = RoundLog(0)  # its own: the sediment's log may be shared by other runs
        n = 0
        for events in batches:
            pending = self._state_deposits(events, [])
            self._remember(pending, log)
            n += sum(len(p[1]) for p in pending)
        return n

    def _state_deposits(self, events: Sequence[Event], said: Sequence[Said]) -> list[_Pending]:
        """With a fact book: each learner's statements of the new states ``events`` made
        (as a witness, or as a listener of a say that retold a state its speaker held)."""
        book = self.facts
        if book is None:
            return []
        by_seq = {ev.seq: ev for ev in events}
        retold = []
        for s in said:
            row = next((h for h in self._held.get(s.agent, []) if h.id == s.basis), None)
            if row is not None and book.state_of(row.text) is not None and s.seq in by_seq:
                retold.append((by_seq[s.seq], row.text))
        out: list[_Pending] = []
        for owner, texts in book.learners(events, retold).items():
            book.learned += len(texts)
            # A state statement reports a fact of its own: negative ids keep it apart from events' facts.
            facts: list[Fact] = [(-1 - book.number(t), -1) for t in texts]
            out.append((owner, texts, facts, [frozenset({owner})] * len(texts)))
        return out

    # ------------------------------------------------------------ recall

    def recall_need(self, agent: str, view: AgentView) -> RecallNeed | None:
        """What ``agent``'s decision lacks: the policy's ``recall_need`` if it
        has one; else its focus, when its short-term memory holds no row."""
        ask = getattr(self.policy, "recall_need", None)
        if callable(ask):
            need = ask(agent, view)
            return need if isinstance(need, RecallNeed) else None
        if view.stm.recalled:
            return None
        return RecallNeed(view.stm.focus_text() or agent)

    def _recall_many(self, queries: list[tuple[str, str]], log: RoundLog) -> list[list[Any]]:
        """One recall per ``(agent, text)``, in order; the rows each returned.
        A backend with ``recall_many`` (the consensus store's) gets them in
        one call, which the engine runs across threads: the queries are all
        known before any row is held, so the answers are the same. Each
        recall is then logged with the batch's time split evenly."""
        out = []
        vecs: Any = self.embed([t for _, t in queries]) if queries else []
        many = getattr(self.backend, "recall_many", None)
        if callable(many) and len(queries) > 1:
            t0 = time.perf_counter()
            found = [list(m) for m in many([(agent, q) for (agent, _), q in zip(queries, vecs)], self.k)]
            ms = (time.perf_counter() - t0) * 1000.0 / len(queries)
            for mems in found:
                self._count(mems, log, ms)
            return found
        for (agent, _), q in zip(queries, vecs):
            t0 = time.perf_counter()
            mems = list(self.backend.recall(agent, q, self.k))
            self._count(mems, log, (time.perf_counter() - t0) * 1000.0)
            out.append(mems)
        return out

    @staticmethod
    def _count(mems: list[Any], log: RoundLog, ms: float) -> None:
        """A recall's share of the log."""
        log.recall_ms.append(ms)
        log.recalls += 1
        edges = sum(1 for m in mems if getattr(m, "via", "hit") == "edge")
        log.hits += len(mems) - edges
        if edges:
            log.expanded += 1
            log.edge_rows += edges

    def _hold(self, agent: str, mems: list[Any], log: RoundLog, kind: str, subject: str | None) -> None:
        """Recalled rows go to the agent's short-term memory; the call is logged for Table 4."""
        r = log.round
        rows = [Recalled(str(m.text), int(m.round), r, str(getattr(m, "via", "hit")), int(m.id)) for m in mems]
        self.memory_of(agent).hold(rows, r)
        log.recall_calls.append(
            RecallCall(
                agent,
                kind,
                subject,
                tuple(x.text for x in rows if x.via != "edge"),
                tuple(x.text for x in rows if x.via == "edge"),
            )
        )

    # ------------------------------------------------------------ a round

    def _view(self, agent: str, r: int) -> AgentView:
        world = self.world
        stm = self.stm[agent]
        place = world.agents[agent].place
        stm.status.set("round", r)
        stm.status.set("place", place)
        stm.forget_stale(r)
        thread = len(world.threads.get(place or "", []))
        return AgentView(
            agent,
            r,
            place,
            [p for p in world.present(place) if p != agent],
            stm,
            [],
            unread=thread - self._read.get(agent, 0) if place else 0,
            places=list(world.places),
            cast=list(world.agents),
        )

    def _decide(self, views: list[tuple[str, AgentView]]) -> list[Action]:
        """Every view's action, in order."""
        return [self.policy.decide(agent, view) for agent, view in views]

    def step(self) -> RoundLog | None:
        """Run one round; ``None`` when the story is over or nobody is awake."""
        begun = self._begin_round()
        if begun is None:
            return None
        r, log, awake, actions = begun
        views = [(a, self._view(a, r)) for a in awake]
        needs = [(a, self.recall_need(a, v)) for a, v in views]
        asked = [(a, n) for a, n in needs if n is not None]
        found = self._recall_many([(a, n.text) for a, n in asked], log)
        for (a, n), mems in zip(asked, found):
            self._hold(a, mems, log, "stm", n.subject)
        for a, v in views:
            self._held[a] = list(self.stm[a].recalled)
            v.memories = [h.text for h in self._held[a]]
        actions.extend(self._decide(views))
        return self._finish_round(log, actions, r)

    def _begin_round(self) -> tuple[int, RoundLog, list[str], list[Action]] | None:
        """The round's start: the policy wakes agents; ``None`` (and ``stopped``
        said) when the story is over or nobody is awake. Else the round, its
        log, the awake agents and the world's actions."""
        r = self.round + 1
        wake = self.policy.begin_round(self.world, r)
        if wake is None:
            self.stopped = "the policy's story is over"
            return None
        world = self.world
        for a in wake:
            world.add_agent(a)
            self.memory_of(a)
        awake = [a for a, ag in world.agents.items() if ag.alive and (ag.awake or a in wake)]
        if not awake:
            self.stopped = f"nobody is awake in round {r}"
            self.warn(f"{self.stopped}: the run stops here")
            return None
        self.round = r
        log = RoundLog(r)
        actions: list[Action] = list(getattr(self.policy, "world_actions", lambda: [])())
        return r, log, awake, actions

    def _read_thread(self, agent: str) -> list[Event]:
        """What is new in the thread where ``agent`` stands (the last few), now read."""
        place = self.world.agents[agent].place or ""
        thread = self.world.threads.get(place, [])
        new = thread[self._read.get(agent, 0) :][-READ_ITEMS:]
        self._read[agent] = len(thread)
        return [ev for ev in new if agent not in ev.actors]

    def _observe(self, agent: str) -> list[Event]:
        """Moves and acts where ``agent`` stands that it witnessed since it last looked (the last few)."""
        world = self.world
        place = world.agents[agent].place
        start = self._observed.get(agent, len(world.events))
        self._observed[agent] = len(world.events)
        seen = [
            ev
            for ev in world.events[start:]
            if ev.kind != "say" and ev.place == place and agent in ev.witnesses and agent not in ev.actors
        ]
        return seen[-READ_ITEMS:]

    def _finish_round(self, log: RoundLog, actions: list[Action], r: int) -> RoundLog:
        """The round after its decisions: the barrier applies the actions, the
        reading actions read, short-term memories take in the results, and
        each agent's deposit of its own action goes to the backend, all in one batch."""
        world = self.world
        log.actions = actions
        events, results = apply_actions(world, actions, r)
        log.events = events
        self.ledger.add_events(events)
        by_agent = {a.agent: a for a in actions if a.agent}
        for ev in events:
            if ev.kind != "say" or not ev.actors:
                continue
            act = by_agent.get(ev.actors[0])
            held = self._held.get(ev.actors[0], [])
            basis = None
            if act is not None and act.basis is not None and 0 <= act.basis < len(held):
                basis = held[act.basis].id
                if act.form in ("", "retelling"):
                    self.ledger.retells(ev.seq, basis)
            log.said.append(Said(ev.actors[0], ev.text, basis, ev.seq, act.form if act is not None else ""))
        # The reading actions read after the barrier; a ponder recalls its question.
        readings: dict[str, list[Event]] = {}
        for act in actions:
            if act.kind == "read_thread":
                readings[act.agent] = self._read_thread(act.agent)
                results[act.agent] = " ".join(f"{' and '.join(e.actors)}: {e.text}" for e in readings[act.agent])
                results[act.agent] = results[act.agent] or "Nothing new said."
            elif act.kind == "observe":
                readings[act.agent] = self._observe(act.agent)
                here = world.agents[act.agent].place
                others = [a for a in world.present(here) if a != act.agent]
                seen = "; ".join(
                    e.text if not e.actors else f"{' and '.join(e.actors)}: {e.text}" for e in readings[act.agent]
                )
                results[act.agent] = f"At {here}: {', '.join(others) or 'nobody else'}." + (f" {seen}." if seen else "")
            elif act.kind == "ponder" and act.text:
                (found,) = self._recall_many([(act.agent, act.text)], log)
                self._hold(act.agent, found, log, "ponder", act.subject or None)
                results[act.agent] = " | ".join(str(m.text) for m in found) or "nothing comes to mind"
        # Each agent deposits the results of its own action, and nothing else.
        order: list[Action] = []
        pending: list[_Pending] = []
        for act in actions:
            if not act.agent:
                continue
            mine = readings.get(act.agent) if act.kind in ("read_thread", "observe") else None
            if mine is None:
                mine = [ev for ev in events if act.agent in ev.actors] if act.kind in ("say", "act_on", "move") else []
            order.append(act)
            p = self._accounts_of(act.agent, mine)
            pending.append(p if p is not None else (act.agent, [], [], []))
        self._update_stm(actions, events, results, readings, pending)
        states = self._state_deposits(events, log.said)
        stored = iter(self._remember([p for p in pending if p[1]] + states, log))
        for act, p in zip(order, pending):
            ids, merged = next(stored) if p[1] else ([], [])
            log.acted.append(Deposit(r, act.agent, act.kind, tuple(ids), tuple(merged)))
        log.records = self._records()
        self.logs.append(log)
        return log

    def _update_stm(
        self,
        actions: list[Action],
        events: list[Event],
        results: dict[str, str],
        readings: dict[str, list[Event]],
        pending: list[_Pending],
    ) -> None:
        r = self.round
        by_agent = {a.agent: a for a in actions if a.agent}
        for ev in events:
            act = by_agent.get(ev.actors[0]) if ev.actors else None
            for w in ev.witnesses:
                stm = self.memory_of(w)
                stm.saw_with(r, set(ev.witnesses) - {w})
                self._sighted(stm, ev)
                if ev.kind == "enter" and w in ev.actors:
                    stm.status.set("arrived", r)
                    if not stm.associates:  # an agent that seeks no one takes part where it goes
                        stm.goals.push(f"take part in what happens at {ev.place}")
                elif ev.kind == "exit" and w in ev.actors and not stm.associates:
                    stm.goals.pop()
                elif w not in ev.actors and ev.kind == "say":
                    stm.heard = (stm.heard + [ev.text])[-5:]
                    if act is not None and act.form == "question" and w in ev.targets and act.subject:
                        stm.questions.append(Question(ev.actors[0], act.subject, r))
        for agent, evs in readings.items():
            stm = self.memory_of(agent)
            for ev in evs:
                self._sighted(stm, ev)
        for owner, texts, _, _ in pending:
            if texts and by_agent.get(owner) is not None and by_agent[owner].kind in ("read_thread", "observe"):
                stm = self.memory_of(owner)
                stm.learned = (stm.learned + [(r, t) for t in texts])[-8:]
        for act in actions:
            if act.agent and act.form == "answer":
                stm = self.memory_of(act.agent)
                stm.questions = [q for q in stm.questions if not (q.subject == act.subject and q.asker in act.to)]
        for name, ag in self.world.agents.items():
            if not ag.alive and name in self.stm:
                self.stm[name].status.set("alive", False)
            elif ag.place is not None and name in self.stm:
                self._goal_reached(name, ag.place)
        acted = [a for a in actions if a.agent]
        if not acted:
            return
        texts = [f"{a.kind} {a.text}".strip() for a in acted]
        focus_vecs = self.embed([self.memory_of(a.agent).focus_text() or a.agent for a in acted])
        entry_vecs = self.embed([f"{t} -> {results.get(a.agent, '')}" for t, a in zip(texts, acted)])
        for a, text, fv, ev in zip(acted, texts, focus_vecs, entry_vecs):
            stm = self.memory_of(a.agent)
            stm.status.set("last_action", a.kind)
            stm.cache.add(CacheEntry(text, results.get(a.agent, ""), r, 0, ev), fv)

    def _sighted(self, stm: ShortTermMemory, ev: Event) -> None:
        """Where an event puts its doers, as the one who saw or read of it knows."""
        for a in ev.actors:
            if ev.kind == "exit":
                if stm.whereabouts.get(a, ("", 0))[0] == ev.place:
                    del stm.whereabouts[a]
            else:
                stm.whereabouts[a] = (ev.place, ev.round)

    def _goal_reached(self, agent: str, place: str) -> None:
        """A ``find`` goal is met when the one sought stands here: the agent seeks the next one."""
        stm = self.stm[agent]
        goal = stm.goals.peek() or ""
        if not goal.startswith(GOAL_FIND):
            return
        sought = goal[len(GOAL_FIND) :]
        world = self.world
        gone = sought in world.agents and not world.agents[sought].alive
        if sought in world.present(place) or gone:
            stm.goals.pop()
            living = [p for p in stm.associates if p in world.agents and world.agents[p].alive and p != sought]
            if living:
                i = (stm.associates.index(sought) + 1) % len(stm.associates) if sought in stm.associates else 0
                nxt = next((p for p in stm.associates[i:] + stm.associates[:i] if p in living), living[0])
                stm.goals.push(GOAL_FIND + nxt)

    def run(self, rounds: int, on_round: Callable[[RoundLog], None] | None = None) -> list[RoundLog]:
        """Step up to ``rounds`` rounds (fewer when the story ends or nobody is awake)."""
        for _ in range(rounds):
            log = self.step()
            if log is None:
                break
            if on_round is not None:
                on_round(log)
        return self.logs
