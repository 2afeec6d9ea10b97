"""The round-barrier kernel.

Round 0 sediments the source: its events, batch by batch, become each
witness's account, deposited through the backend's own ``remember``. Each
round after: the policy may wake agents; every awake agent recalls from
long-term memory with what it has in mind, then decides on one action from
what it recalled and its short-term memory; at the barrier the world applies
all actions in a fixed order; witnesses' accounts of the round's events go
to the memory backend as one batch (one deposit per witness: its account of
the round, split into statements); short-term memories take in the results.
Nothing an agent does in a round is seen by another agent before the barrier.

Provenance stays here: the backend receives plain strings and vectors; the
:class:`~.provenance.Ledger` learns what each statement reports and where
the backend put it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .accounts import account
from .actions import Action, apply_actions
from .agent_policy import AgentView, Policy
from .backend import MemoryBackend
from .provenance import Fact, Ledger
from .sim_embedder import CachedEmbedder
from .stm import ActionCache, CacheEntry, ShortTermMemory
from .variation import Variation
from .world import Event, World

__all__ = ["RoundLog", "Said", "Kernel"]


@dataclass(frozen=True)
class Said:
    """One thing an agent said in a round, and the recalled row it drew on."""

    agent: str
    text: str
    basis: int | None  # row id of the memory it retold (``None``: none)
    seq: int  # the say event


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
        for a in world.agents:
            self.memory_of(a)

    def memory_of(self, agent: str) -> ShortTermMemory:
        """The agent's short-term memory (created on first need)."""
        if agent not in self.stm:
            self.stm[agent] = ShortTermMemory(cache=ActionCache(*self._cache_args))
        return self.stm[agent]

    def _records(self) -> int:
        count = getattr(self.backend, "records", None)
        return int(count()) if callable(count) else int(self.backend.stats()["records"])

    def _accounts(self, events: Sequence[Event]) -> list[tuple[str, list[str], list[Fact]]]:
        """Every witness's account of ``events`` (one deposit per witness), with provenance."""
        self.ledger.add_events(events)
        per_witness: dict[str, tuple[list[str], list[Fact]]] = {}
        for ev in events:
            for w in ev.witnesses:
                texts, facts = per_witness.setdefault(w, ([], []))
                for text, clause in account(ev, w, self.variation):
                    texts.append(text)
                    facts.append(self.ledger.fact(ev.seq, clause))
        return [(w, t, f) for w, (t, f) in per_witness.items() if t]  # no empty deposit reaches a backend

    def _remember(self, accounts: list[tuple[str, list[str], list[Fact]]], log: RoundLog) -> None:
        """One ``remember`` call for ``accounts``; the ledger learns where each statement went."""
        if not accounts:
            return
        vecs = self.embed([s for _, stmts, _ in accounts for s in stmts])
        items, i = [], 0
        for w, stmts, _ in accounts:
            items.append((w, list(stmts), vecs[i : i + len(stmts)]))
            i += len(stmts)
        t0 = time.perf_counter()
        stored = self.backend.remember(items, log.round)
        ms = (time.perf_counter() - t0) * 1000.0
        log.remember_ms.extend([ms / len(items)] * len(items))
        log.deposits += len(items)
        log.statements += sum(len(s) for _, s, _ in items)
        for (_, _, facts), (ids, merged) in zip(accounts, stored or []):
            self.ledger.deposited(facts, ids, merged, log.round)

    def sediment(
        self, batches: Iterable[Sequence[Event]], on_batch: Callable[[int], None] | None = None, *, per_call: int = 512
    ) -> RoundLog:
        """Round 0: every batch of source events becomes its witnesses' deposits.

        Deposits stay one per witness and batch; up to ``per_call`` of them go
        to the backend in one ``remember`` (one ``deposit_many``), in order.
        """
        log = RoundLog(0)
        pending: list[tuple[str, list[str], list[Fact]]] = []
        n = 0
        for n, events in enumerate(batches, 1):
            for ev in events:
                for a in ev.witnesses:
                    self.memory_of(a)
            pending.extend(self._accounts(events))
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
        # What was said in the source has been heard: only new talk is unread.
        self._read = {a: len(self.world.threads.get(ag.place or "", [])) for a, ag in self.world.agents.items()}
        return log

    def _recall(self, agent: str, texts: list[str], log: RoundLog) -> list[list[Any]]:
        """One recall per text for ``agent``; returns the recalled rows."""
        out = []
        for q in self.embed(texts):
            t0 = time.perf_counter()
            mems = list(self.backend.recall(agent, q, self.k))
            log.recall_ms.append((time.perf_counter() - t0) * 1000.0)
            log.recalls += 1
            edges = sum(1 for m in mems if getattr(m, "via", "hit") == "edge")
            log.hits += len(mems) - edges
            if edges:
                log.expanded += 1
                log.edge_rows += edges
            out.append(mems)
        return out

    def step(self) -> RoundLog | None:
        """Run one round; ``None`` when the story is over or nobody is awake."""
        begun = self._begin_round()
        if begun is None:
            return None
        r, log, awake, focus, actions = begun
        world = self.world
        recalled: dict[str, list[Any]] = {}
        for agent, text in zip(awake, focus):
            stm = self.stm[agent]
            place = world.agents[agent].place
            stm.status.set("round", r)
            stm.status.set("place", place)
            (mems,) = self._recall(agent, [text], log)
            recalled[agent] = mems
            thread = len(world.threads.get(place or "", []))
            view = AgentView(
                agent,
                r,
                place,
                [p for p in world.present(place) if p != agent],
                stm,
                [m.text for m in mems],
                unread=thread - self._read.get(agent, 0) if place else 0,
                places=list(world.places),
            )
            actions.append(self.policy.decide(agent, view))
        return self._finish_round(log, actions, recalled, r)

    def _begin_round(self) -> tuple[int, RoundLog, list[str], list[str], list[Action]] | None:
        """The round's start: the policy wakes agents; ``None`` (and ``stopped``
        said) when the story is over or nobody is awake. Else the round, its
        log, the awake agents, what each has in mind, and the world's actions."""
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
        focus = [self.memory_of(a).focus_text() or a for a in awake]
        actions: list[Action] = list(getattr(self.policy, "world_actions", lambda: [])())
        return r, log, awake, focus, actions

    def _finish_round(self, log: RoundLog, actions: list[Action], recalled: dict[str, list[Any]], r: int) -> RoundLog:
        """The round after its decisions: the barrier applies the actions, the
        reading actions read, short-term memories take in the results, and the
        witnesses' accounts go to the backend as one batch."""
        world = self.world
        log.actions = actions
        events, results = apply_actions(world, actions, r)
        log.events = events
        by_agent = {a.agent: a for a in actions if a.agent}
        for ev in events:
            if ev.kind != "say" or not ev.actors:
                continue
            act = by_agent.get(ev.actors[0])
            mems = recalled.get(ev.actors[0], [])
            basis = None
            if act is not None and act.basis is not None and 0 <= act.basis < len(mems):
                basis = int(mems[act.basis].id)
                self.ledger.retells(ev.seq, basis)
            log.said.append(Said(ev.actors[0], ev.text, basis, ev.seq))
        # Reading actions: the thread is read, a ponder recalls its question.
        for act in actions:
            if act.kind == "read_thread":
                self._read[act.agent] = len(world.threads.get(world.agents[act.agent].place or "", []))
            elif act.kind == "ponder" and act.text:
                (found,) = self._recall(act.agent, [act.text], log)
                results[act.agent] = " | ".join(m.text for m in found) or "nothing comes to mind"
        self._update_stm(actions, events, results)
        self._remember(self._accounts(events), log)
        log.records = self._records()
        self.logs.append(log)
        return log

    def _update_stm(self, actions: list[Action], events: list[Event], results: dict[str, str]) -> None:
        for ev in events:
            for w in ev.witnesses:
                stm = self.memory_of(w)
                stm.saw_with(self.round, set(ev.witnesses) - {w})
                if ev.kind == "enter" and w in ev.actors:
                    stm.goals.push(f"take part in what happens at {ev.place}")
                elif ev.kind == "exit" and w in ev.actors:
                    stm.goals.pop()
                elif w not in ev.actors and ev.kind == "say":
                    stm.heard = (stm.heard + [ev.text])[-5:]
        for name, agent in self.world.agents.items():
            if not agent.alive and name in self.stm:
                self.stm[name].status.set("alive", False)
        acted = [a for a in actions if a.agent]
        if not acted:
            return
        texts = [f"{a.kind} {a.text}".strip() for a in acted]
        focus_vecs = self.embed([self.memory_of(a.agent).focus_text() or a.agent for a in acted])
        entry_vecs = self.embed([f"{t} -> {results.get(a.agent, '')}" for t, a in zip(texts, acted)])
        for a, text, fv, ev in zip(acted, texts, focus_vecs, entry_vecs):
            stm = self.memory_of(a.agent)
            stm.status.set("last_action", a.kind)
            stm.cache.add(CacheEntry(text, results.get(a.agent, ""), self.round, 0, ev), fv)

    def run(self, rounds: int, on_round: Callable[[RoundLog], None] | None = None) -> list[RoundLog]:
        """Step up to ``rounds`` rounds (fewer when the story ends or nobody is awake)."""
        for _ in range(rounds):
            log = self.step()
            if log is None:
                break
            if on_round is not None:
                on_round(log)
        return self.logs
