"""A round of deposits judged item by item against the same round judged in
passes, with a judge that takes a fixed time per call (an LLM's latency).

The world: DEPOSITS agents per round, each depositing 2 statements. About a
quarter of the statements restate an event another agent told earlier in the
same round, a quarter an event of an earlier round, the rest are new events.
Events come in topics: a statement's vector is near its event's, and events
of one topic are close enough (cosine about 0.8, above the store's
``min_similarity`` of 0.75) that a statement's best candidate is now and then
another event of its topic. The judge is an oracle that knows each
statement's event: it names the candidate of the same event, or none, and
sleeps ``--sleep`` seconds per call. Statement lengths vary, so
``keep_shorter`` changes a record's text when a shorter restatement merges
(later requests show the new text).

Each mode starts from a copy of the same store (``--prior`` rounds built
first) and deposits the same ``--rounds`` rounds:

- ``deposits``: one ``Store.deposit`` per agent (a commit each);
- ``per item``: ``deposit_many(judge_per_item=True)``, one judge call per
  item with requests, in order;
- ``passes``: ``deposit_many``, the judge asked in passes;
- ``passes, async``: ``adeposit_many`` with a coroutine judge (each item's
  requests of a pass in a call of its own, the calls of a pass at once).

Judge latencies per round: the judge calls in sequence (for the async judge,
the passes). The modes' stores must end identical; the script checks it.

    python bench/round_passes.py [--deposits 50] [--rounds 3] [--prior 3] [--sleep 0.2]

Runs against the installed package.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from typing import Any, Optional

import numpy as np
from agentsensus import JudgeRequest, Store

DIM = 64


class World:
    """Events in topics, and each round's deposits."""

    def __init__(self, deposits: int, seed: int, topics: int, spread: float) -> None:
        self.rng = np.random.default_rng(seed)
        self.deposits, self.spread = deposits, spread
        self.topics = self._unit(self.rng.standard_normal((topics, DIM)))
        self.statements: list[tuple[int, np.ndarray]] = []  # (event, vector) of every statement
        self.events: list[np.ndarray] = []
        self.event_of: dict[str, int] = {}  # statement text -> event (the oracle's knowledge)
        self.told: list[int] = []  # events of earlier rounds

    @staticmethod
    def _unit(v: np.ndarray) -> np.ndarray:
        return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)

    def _new_event(self) -> int:
        t = self.topics[self.rng.integers(len(self.topics))]
        self.events.append(self._unit(t + self.spread * self._unit(self.rng.standard_normal(DIM))))
        return len(self.events) - 1

    def round(self, r: int) -> list[tuple[str, list[str], np.ndarray]]:
        items = []
        this_round: list[int] = []
        for a in range(self.deposits):
            owner = f"agent{a:03d}"
            events: list[int] = []
            while len(events) < 2:
                u = self.rng.random()
                if u < 0.25 and this_round:
                    e = int(self.rng.choice(this_round))
                elif u < 0.5 and self.told:
                    e = int(self.rng.choice(self.told))
                else:
                    e = self._new_event()
                if e not in events:
                    events.append(e)
            texts, vecs = [], []
            for e in events:
                words = " ".join(f"w{int(x)}" for x in self.rng.integers(0, 50, self.rng.integers(1, 12)))
                text = f"round {r}: {owner} reports event {e} {words}"
                self.event_of[text] = e
                texts.append(text)
                vecs.append(self._unit(self.events[e] + 0.25 * self._unit(self.rng.standard_normal(DIM))))
                self.statements.append((e, vecs[-1]))
            this_round += [e for e in events if e not in this_round]
            items.append((owner, texts, np.stack(vecs)))
        self.told += [e for e in this_round if e not in self.told]
        return items

    def cosines(self) -> tuple[float, float]:
        """Medians over statements: the nearest earlier statement of the same
        event, and the nearest earlier one of another event."""
        ev = np.array([e for e, _ in self.statements])
        vec = np.stack([v for _, v in self.statements])
        sims = vec @ vec.T
        true, other = [], []
        for i in range(1, len(ev)):
            same = ev[:i] == ev[i]
            if same.any():
                true.append(sims[i, :i][same].max())
            if (~same).any():
                other.append(sims[i, :i][~same].max())
        return float(np.median(true)), float(np.median(other))


class Oracle:
    """Names the candidate of the statement's own event; sleeps per call."""

    def __init__(self, event_of: dict[str, int], sleep: float) -> None:
        self.event_of, self.sleep = event_of, sleep
        self.calls = 0
        self.requests = 0
        self.top_wrong = 0  # requests whose best candidate is not the answer

    def answer(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        self.calls += 1
        self.requests += len(requests)
        out: list[Optional[int]] = []
        for r in requests:
            e = self.event_of[r.statement]
            out.append(next((c.id for c in r.candidates if self.event_of[c.text] == e), None))
            self.top_wrong += int(out[-1] != r.candidates[0].id)
        return out

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        time.sleep(self.sleep)
        return self.answer(requests)


class AsyncOracle(Oracle):
    """The oracle as a coroutine; ``waves`` counts the latencies in sequence
    (a call that starts while another is running shares its latency)."""

    def __init__(self, event_of: dict[str, int], sleep: float) -> None:
        super().__init__(event_of, sleep)
        self.running = self.waves = 0

    async def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:  # type: ignore[override]
        self.waves += self.running == 0
        self.running += 1
        try:
            await asyncio.sleep(self.sleep)
        finally:
            self.running -= 1
        return self.answer(requests)


def state(s: Store) -> tuple[Any, ...]:
    return (
        [(m.id, m.text, m.owners, m.round, tuple(s.neighbors(m.id))) for m in s.records()],
        list(s.merges()),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--deposits", type=int, default=50, help="agents depositing per round")
    p.add_argument("--rounds", type=int, default=3, help="rounds measured per mode")
    p.add_argument("--prior", type=int, default=3, help="rounds in the store before the measured ones")
    p.add_argument("--sleep", type=float, default=0.2, help="the judge's seconds per call")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--topics", type=int, default=40, help="events fall in this many topics")
    p.add_argument("--spread", type=float, default=0.6, help="how far an event lies from its topic")
    a = p.parse_args()
    for name in ("deposits", "rounds"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if a.prior < 0 or a.sleep < 0:
        p.error("--prior and --sleep must be at least 0")

    world = World(a.deposits, a.seed, a.topics, a.spread)
    prior = [world.round(r) for r in range(1, a.prior + 1)]
    measured = [world.round(r) for r in range(a.prior + 1, a.prior + a.rounds + 1)]
    true, other = world.cosines()
    print(
        f"cosine of a statement to the nearest earlier statement of its event: median {true:.2f}; "
        f"to the nearest of another event: median {other:.2f}"
    )
    kw: dict[str, Any] = {"dim": DIM, "sync": False}
    modes = ["deposits", "per item", "passes", "passes, async"]
    with tempfile.TemporaryDirectory(prefix="round-passes-") as root:
        base = os.path.join(root, "base")
        with Store(base, judge=Oracle(world.event_of, 0.0), **kw) as s:
            for r, items in enumerate(prior, 1):
                s.deposit_many(items, round=r)
            print(f"store before the measured rounds: {s.stats().records} records from {a.prior} rounds")
        results: dict[str, dict[str, Any]] = {}
        ends = {}
        for mode in modes:
            path = os.path.join(root, mode.replace(", ", "-").replace(" ", "-"))
            shutil.copytree(base, path)
            judge = AsyncOracle(world.event_of, a.sleep) if mode == "passes, async" else Oracle(world.event_of, a.sleep)
            walls, calls, latencies, requests = [], [], [], []
            with Store(path, judge=judge, **kw) as s:
                for k, items in enumerate(measured):
                    rnd = a.prior + 1 + k
                    c0, q0, w0 = judge.calls, judge.requests, getattr(judge, "waves", 0)
                    t0 = time.perf_counter()
                    if mode == "deposits":
                        for o, t, v in items:
                            s.deposit(o, t, v, round=rnd)
                    elif mode == "passes, async":
                        asyncio.run(s.adeposit_many(items, round=rnd))
                    else:
                        s.deposit_many(items, round=rnd, judge_per_item=mode == "per item")
                    walls.append(time.perf_counter() - t0)
                    calls.append(judge.calls - c0)
                    latencies.append(getattr(judge, "waves", judge.calls) - (w0 if hasattr(judge, "waves") else c0))
                    requests.append(judge.requests - q0)
                ends[mode] = state(s)
            results[mode] = {
                "wall": statistics.median(walls),
                "calls": calls,
                "latencies": latencies,
                "requests": requests,
                "top_wrong": judge.top_wrong / max(1, judge.requests),
            }
    same = all(ends[m] == ends["deposits"] for m in modes)
    seq = results["per item"]["wall"]
    print(f"{a.deposits} deposits of 2 statements per round, {a.rounds} rounds, judge {a.sleep * 1000:.0f} ms per call")
    print("| mode | wall per round (median) | vs per item | judge calls per round | latencies per round | requests |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        r = results[mode]
        print(
            f"| {mode} | {r['wall']:.2f} s | {seq / r['wall']:.1f}x | {r['calls']} | {r['latencies']} | {r['requests']} |"
        )
    wrong = results["passes"]["top_wrong"]
    print(f"requests in passes whose best candidate was not the judge's answer: {wrong:.1%}")
    print(f"max judge latencies per round in passes: {max(results['passes']['latencies'])} (target <= 3)")
    print(f"stores identical across modes: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit("the modes' stores differ")


if __name__ == "__main__":
    main()
