"""The round-barrier kernel.

Each round: the policy wakes whoever the story needs; every awake agent
recalls from long-term memory with what it has in mind, then decides on one
action; at the barrier the world applies all actions in a fixed order;
witnesses' accounts of the round's events go to the memory backend as one
batch (one deposit per witness: its account of the round, split into
statements); short-term memories take in the results. Nothing an agent does in a
round is seen by another agent before the barrier.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .accounts import account
from .actions import Action, apply_actions
from .backend import MemoryBackend
from .embedding import CachedEmbedder
from .policy import AgentView, Policy
from .stm import ActionCache, CacheEntry, ShortTermMemory
from .world import Event, World

__all__ = ["RoundLog", "Kernel"]


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
    expanded: int = 0  # recalls that returned at least one linked row
    edge_rows: int = 0  # linked rows those recalls returned


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
    ) -> None:
        self.world, self.policy, self.backend, self.embed = world, policy, backend, embed
        self.k = k
        self._cache_args = (cache_capacity, cache_policy)
        self.stm: dict[str, ShortTermMemory] = {}
        self.round = 0
        self.logs: list[RoundLog] = []
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

    def _remember(self, items: list, log: RoundLog) -> None:  # type: ignore[type-arg]
        if not items:
            return
        t0 = time.perf_counter()
        self.backend.remember(items, log.round)
        ms = (time.perf_counter() - t0) * 1000.0
        log.remember_ms.extend([ms / len(items)] * len(items))
        log.deposits += len(items)
        log.statements += sum(len(s) for _, s, _ in items)

    def sediment(self, items: Sequence[tuple[str, list[str]]]) -> RoundLog:
        """Round 0: deposit each agent's source items."""
        log = RoundLog(0)
        for owner, _ in items:
            self.world.add_agent(owner)
            self.memory_of(owner)
        texts = [s for _, stmts in items for s in stmts]
        vecs = self.embed(texts)
        batch, i = [], 0
        for owner, stmts in items:
            batch.append((owner, list(stmts), vecs[i : i + len(stmts)]))
            i += len(stmts)
        self._remember(batch, log)
        log.records = self._records()
        self.logs.append(log)
        return log

    def _recall(self, agent: str, texts: list[str], log: RoundLog) -> list[list[str]]:
        """One recall per text for ``agent``; returns the recalled texts."""
        out = []
        for q in self.embed(texts):
            t0 = time.perf_counter()
            mems = self.backend.recall(agent, q, self.k)
            log.recall_ms.append((time.perf_counter() - t0) * 1000.0)
            log.recalls += 1
            edges = sum(1 for m in mems if getattr(m, "via", "hit") == "edge")
            if edges:
                log.expanded += 1
                log.edge_rows += edges
            out.append([m.text for m in mems])
        return out

    def step(self) -> RoundLog | None:
        """Run one round; ``None`` when the policy's story is over."""
        r = self.round + 1
        wake = self.policy.begin_round(self.world, r)
        if wake is None:
            return None
        self.round = r
        log = RoundLog(r)
        world = self.world
        for a in wake:
            world.add_agent(a)
            self.memory_of(a)
        awake = [a for a, ag in world.agents.items() if ag.alive and (ag.awake or a in wake)]
        focus = [self.memory_of(a).focus_text() or a for a in awake]
        actions: list[Action] = list(getattr(self.policy, "world_actions", lambda: [])())
        for agent, text in zip(awake, focus):
            stm = self.stm[agent]
            place = world.agents[agent].place
            stm.status.set("round", r)
            stm.status.set("place", place)
            (memories,) = self._recall(agent, [text], log)
            thread = len(world.threads.get(place or "", []))
            view = AgentView(agent, r, place, [p for p in world.present(place) if p != agent], stm,
                             memories, unread=thread - self._read.get(agent, 0) if place else 0)
            actions.append(self.policy.decide(agent, view))
        log.actions = actions
        events, results = apply_actions(world, actions, r)
        log.events = events
        # Reading actions: the thread is read, a ponder recalls its question.
        for act in actions:
            if act.kind == "read_thread":
                self._read[act.agent] = len(world.threads.get(world.agents[act.agent].place or "", []))
            elif act.kind == "ponder":
                (found,) = self._recall(act.agent, [act.text], log)
                results[act.agent] = " | ".join(found) or "nothing comes to mind"
        self._update_stm(actions, events, results)
        # The barrier's deposits: one per witness, its own account of everything
        # it witnessed this round (one agent's write), all in one batch.
        per_witness: dict[str, list[str]] = {}
        for ev in events:
            for w in ev.witnesses:
                per_witness.setdefault(w, []).extend(account(ev, w))
        accounts = list(per_witness.items())
        vecs = self.embed([s for _, stmts in accounts for s in stmts])
        items, i = [], 0
        for w, stmts in accounts:
            items.append((w, stmts, vecs[i : i + len(stmts)]))
            i += len(stmts)
        self._remember(items, log)
        log.records = self._records()
        self.logs.append(log)
        return log

    def _update_stm(self, actions: list[Action], events: list[Event], results: dict[str, str]) -> None:
        for ev in events:
            for w in ev.witnesses:
                stm = self.memory_of(w)
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
        """Step up to ``rounds`` rounds (fewer when the story ends)."""
        for _ in range(rounds):
            log = self.step()
            if log is None:
                break
            if on_round is not None:
                on_round(log)
        return self.logs
