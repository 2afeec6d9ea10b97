"""Judge requests on a stream of restatements: how often the write path asks
the judge, against how often a statement could be a fact already stored.

The stream: ``--facts`` facts (who did what to which thing, where, in
which town, when),
each told twice by two different agents in different words: a frame ("I saw
...", "Mara told me ...", "Word is that ...", none), and for the action,
object and place one of a few synonyms, so that the two tellings of a fact
never share their text and often not their main words. Facts share names,
places and days with other facts, and every telling shares its frame's small
words ("the", "at", "on", "told", "me") with most of the stream. The tellings
are shuffled, each fact's first telling before its second: ``facts``
statements create a record and ``facts`` restate one (the restatements).

The judge is a counting oracle: it knows which fact each statement and each
record tells, names the fact's record when it is among the candidates (else
no match), and counts its calls, requests and the candidates shown (a proxy
for the prompt's tokens). Each mode deposits the whole stream into a new
store (``sync=False``), either one statement per ``deposit`` (item by item)
or as ``deposit_many`` batches of ``--batch`` items (passes), with hybrid
candidates (the default ``lexical_candidates=8``) or vector candidates only
(``lexical_candidates=0``).

Columns: requests over restatements (1.0 would ask only about the
restatements), candidates shown per request, records over facts (1.0: every
restatement found its fact), statements per second of the item-by-item run
(median of ``--repeats``, by the process's CPU time, steadier than wall time
on a shared machine), and for ``deposit_many`` its requests and candidates
over the same mode's item by item. Vectors come from the hash embedder (no
model) unless ``--embedder minilm``: its similarity counts shared words and
bigrams, so the vector path behaves more lexically than a real model's would.
``--lexical-min-similarity S`` asks every lexical hit for a cosine of at
least S as well, unless it holds most of the statement
(``Store(lexical_min_similarity=...)``; off by default).

``--equal-records`` compares at equal quality too: vector-only at the
store's ``min_similarity`` keeps a record for every restatement its vectors
miss, so it does less work than hybrid for a worse result. The flag lowers
vector-only's ``min_similarity`` from 0.70 in steps of 0.05 (down to 0.30)
until its records are within 1% of the facts, prints each step, and times
that setting as one more mode (``vector@S``) beside the other two; when no
step gets there it says so and adds no mode.

    python bench/judge_requests.py                 # 250 facts, batches of 500
    python bench/judge_requests.py --facts 60 --batch 50 --repeats 1
    python bench/judge_requests.py --embedder minilm   # with the minilm extra
    python bench/judge_requests.py --embedder minilm --lexical-min-similarity 0.55
    python bench/judge_requests.py --embedder minilm --equal-records
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from agentsensus import JudgeRequest, Store
from agentsensus.embedders import from_name

NAMES = (
    "Alder Bram Corin Dova Esk Farrow Galen Hollis Ivo Juna Kestrel Lorn Mara Nell Orrin Pell Quill Rook Sable "
    "Tamsin Ulric Vesna Wren Yarrow Zeb Ansel Brisa Cato Delphine Emrys"
).split()
# each concept: its synonyms (past tense verbs / nouns)
ACTIONS = [
    ("bought", "purchased", "paid for"),
    ("sold", "traded away", "got rid of"),
    ("repaired", "fixed", "mended"),
    ("lost", "misplaced", "could not find"),
    ("stole", "took", "made off with"),
    ("painted", "coloured", "decorated"),
    ("buried", "hid underground", "put in the ground"),
    ("delivered", "brought", "carried over"),
    ("broke", "smashed", "cracked"),
    ("borrowed", "lent out", "took on loan"),
]
OBJECTS = [
    ("lantern", "lamp"),
    ("boat", "skiff"),
    ("ledger", "account book"),
    ("horse", "mare"),
    ("cart", "wagon"),
    ("sword", "blade"),
    ("map", "chart"),
    ("barrel of wine", "cask of wine"),
    ("necklace", "pendant"),
    ("fiddle", "violin"),
    ("anchor", "mooring weight"),
    ("bell", "chime"),
    ("coat", "cloak"),
    ("clock", "timepiece"),
    ("saddle", "riding seat"),
]
PLACES = [
    ("market", "bazaar"),
    ("harbour", "docks"),
    ("mill", "grain mill"),
    ("chapel", "church"),
    ("inn", "tavern"),
    ("forge", "smithy"),
    ("bridge", "river crossing"),
    ("orchard", "apple grove"),
    ("library", "reading room"),
    ("barracks", "garrison"),
]
SURNAMES = (
    "Voss Hale Marsh Quent Brenner Oakes Tull Fenwick Garrow Lisle Penhale Stroud Vane Wickham Ashdown Cray "
    "Dunmore Elphick Haskett Morrow"
).split()
ADJECTIVES = "red brass oak silver cracked painted old copper green iron carved blue".split()
TOWNS = (
    "Eastbrook Harrowgate Millby Saltmere Thornwick Ashcombe Dunhollow Kettering Lowmoor Pellham Redwater "
    "Stonebridge Wexley Yarrowdale Brightwell"
).split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
FRAMES = [
    "I saw {s}.",
    "{w} told me that {s}.",
    "Word at the inn is that {s}.",
    "{s}, or so I heard from {w}.",
    "With my own eyes: {s}.",
    "I am sure that {s}.",
    "{s}.",
    "Someone at the well said {s}.",
]
SHAPES = [
    "{n} {a} the {o} at the {p} in {t} on {d}",
    "on {d} {n} {a} the {o} at the {p} in {t}",
    "at the {p} in {t}, {n} {a} the {o} on {d}",
    "the {o} was {a} by {n} at the {p} in {t} on {d}",
    "in {t} on {d}, {n} {a} the {o} at the {p}",
]


@dataclass(frozen=True)
class Fact:
    name: int
    action: int
    obj: int
    place: int
    day: int
    adjective: int
    town: int


def who(f: Fact) -> str:
    """A fact's actor: a first name and a family name."""
    return f"{NAMES[f.name % len(NAMES)]} {SURNAMES[f.name // len(NAMES)]}"


def make_facts(n: int, rng: random.Random) -> list[Fact]:
    """n distinct facts; no two share (who, action, object)."""
    seen: set[tuple[int, int, int]] = set()
    out: list[Fact] = []
    while len(out) < n:
        f = Fact(
            rng.randrange(len(NAMES) * len(SURNAMES)),
            rng.randrange(len(ACTIONS)),
            rng.randrange(len(OBJECTS)),
            rng.randrange(len(PLACES)),
            rng.randrange(len(DAYS)),
            rng.randrange(len(ADJECTIVES)),
            rng.randrange(len(TOWNS)),
        )
        if (f.name, f.action, f.obj) not in seen:
            seen.add((f.name, f.action, f.obj))
            out.append(f)
    return out


def telling(f: Fact, rng: random.Random, avoid: Optional[tuple[int, ...]] = None) -> tuple[str, tuple[int, ...]]:
    """One wording of fact f: (text, the choices made); never the choices in avoid."""
    while True:
        a, o, p = rng.randrange(3), rng.randrange(2), rng.randrange(2)
        frame, shape = rng.randrange(len(FRAMES)), rng.randrange(len(SHAPES))
        choice = (a, o, p, frame, shape)
        # the second telling differs in the frame and in at least one word of the content
        if avoid is None or (frame != avoid[3] and (a, o, p) != avoid[:3]):
            break
    w = NAMES[(f.name + 1 + rng.randrange(len(NAMES) - 1)) % len(NAMES)]  # the informant: a first name
    s = SHAPES[shape].format(
        n=who(f),
        a=ACTIONS[f.action][a],
        o=f"{ADJECTIVES[f.adjective]} {OBJECTS[f.obj][o]}",
        p=PLACES[f.place][p],
        t=TOWNS[f.town],
        d=DAYS[f.day],
    )
    text = FRAMES[frame].format(s=s, w=w)
    return text[0].upper() + text[1:], choice


def make_stream(facts: int, seed: int, agents: int = 20) -> list[tuple[str, str, int]]:
    """(agent, text, fact) for every telling, each fact's first telling
    first; two different agents of ``agents`` tell each fact."""
    rng = random.Random(seed)
    fs = make_facts(facts, rng)
    first, second = [], []
    for i, f in enumerate(fs):
        t1, c1 = telling(f, rng)
        t2, _ = telling(f, rng, c1)
        a1 = rng.randrange(agents)
        a2 = (a1 + 1 + rng.randrange(agents - 1)) % agents
        first.append((f"agent{a1}", t1, i))
        second.append((f"agent{a2}", t2, i))
    # shuffle, keeping each fact's first telling before its second
    order = [0] * facts + [1] * facts
    rng.shuffle(order)
    seen: list[int] = list(range(facts))
    rng.shuffle(seen)
    told, pending, out = 0, [], []
    for o in order:
        if (o == 1 and pending) or told == facts:
            out.append(second[pending.pop(rng.randrange(len(pending)))])
        else:
            i = seen[told]
            told += 1
            out.append(first[i])
            pending.append(i)
    return out


class Oracle:
    """Knows each statement's fact and each record's; counts what it is asked."""

    def __init__(self, fact_of: dict[str, int]) -> None:
        self.fact_of = fact_of
        self.calls = self.requests = self.shown = 0

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        self.calls += 1
        self.requests += len(requests)
        out = []
        for r in requests:
            self.shown += len(r.candidates)
            want = self.fact_of[r.statement]
            out.append(next((c.id for c in r.candidates if self.fact_of.get(c.text) == want), None))
        return out


def keep_first(existing: str, incoming: str) -> str:
    """A record keeps its first text, so the oracle knows its fact by it."""
    return existing


@dataclass
class Run:
    requests: int
    shown: int
    calls: int
    records: int
    cpu: float
    wall: float


def deposit_stream(s: Store, stream: list[tuple[str, str, int]], vecs: np.ndarray, batch: int) -> None:
    """The stream into ``s``: one statement per ``deposit`` (batch 0), or
    ``deposit_many`` batches of ``batch`` items."""
    if batch == 0:
        for (agent, text, _), v in zip(stream, vecs):
            s.deposit(agent, [text], v[None])
        return
    for a in range(0, len(stream), batch):
        s.deposit_many([(agent, [text], v[None]) for (agent, text, _), v in zip(stream[a:], vecs[a:])][:batch])


def run(stream: list[tuple[str, str, int]], vecs: np.ndarray, lexical: int, batch: int, **opts: Any) -> Run:
    """Deposits the stream into a new store; batch 0: item by item."""
    oracle = Oracle({t: f for _, t, f in stream})
    with tempfile.TemporaryDirectory() as d:
        with Store(
            os.path.join(d, "s"), dim=vecs.shape[1], judge=oracle, lexical_candidates=lexical,
            merge_policy=keep_first, sync=False, exact_cutoff=1 << 17, **opts,
        ) as s:  # fmt: skip
            t0, c0 = time.perf_counter(), time.process_time()
            deposit_stream(s, stream, vecs, batch)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            records = s.stats().records
    return Run(oracle.requests, oracle.shown, oracle.calls, records, cpu, wall)


# vector-only's min_similarity steps for --equal-records: below the store's
# default 0.75, down to where a candidate shares little more than its words
EQUAL_STEPS = (0.70, 0.65, 0.60, 0.55, 0.50, 0.45, 0.40, 0.35, 0.30)


def equal_records_similarity(
    stream: list[tuple[str, str, int]], vecs: np.ndarray, facts: int, opts: dict[str, Any]
) -> Optional[float]:
    """The highest of EQUAL_STEPS at which vector-only candidates keep records
    within 1% of the facts, each step printed; None when none does."""
    for ms in EQUAL_STEPS:
        r = run(stream, vecs, 0, 0, **{**opts, "min_similarity": ms})
        print(
            f"vector-only at min_similarity {ms:.2f}: records/facts {r.records / facts:.3f}, "
            f"req/restated {r.requests / facts:.2f}"
        )
        if r.records <= facts * 1.01:
            return ms
    print(
        f"vector-only keeps more than 1% more records than facts at every min_similarity down to {EQUAL_STEPS[-1]:.2f}"
    )
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", type=int, default=250)
    p.add_argument("--batch", type=int, default=500, help="deposit_many batch size (default: the whole stream)")
    p.add_argument("--repeats", type=int, default=3, help="item-by-item runs timed per mode (median)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--lexical-floor", type=float, default=None, help="Store(lexical_floor=...); default: the store's")
    p.add_argument(
        "--lexical-min-similarity",
        type=float,
        default=None,
        help="Store(lexical_min_similarity=...); default: the store's (off)",
    )
    p.add_argument("--show", type=int, default=0, help="print this many tellings of the stream first")
    p.add_argument(
        "--embedder", default="hash", help="hash (default, no model) or minilm (the minilm extra: a real model)"
    )
    p.add_argument(
        "--equal-records",
        action="store_true",
        help="also time vector-only at the highest min_similarity keeping records within 1%% of facts",
    )
    a = p.parse_args()
    if a.facts < 1 or a.batch < 1 or a.repeats < 1:
        p.error("--facts, --batch and --repeats must be at least 1")
    opts: dict[str, Any] = {} if a.lexical_floor is None else {"lexical_floor": a.lexical_floor}
    if a.lexical_min_similarity is not None:
        opts["lexical_min_similarity"] = a.lexical_min_similarity
    stream = make_stream(a.facts, a.seed)
    for agent, text, f in stream[: a.show]:
        print(f"  fact {f:4d}  {agent:8s} {text}")
    embed = from_name(a.embedder)
    vecs = np.asarray(embed([t for _, t, _ in stream]), dtype=np.float32)
    print(f"stream: {a.facts} facts told twice ({len(stream)} statements, {a.facts} restatements), seed {a.seed}")
    print(
        f"embedder: {a.embedder} ({vecs.shape[1]}-d); judge: counting oracle; sync=False; batch {a.batch}; options {opts or 'default'}"
    )
    # mode -> (lexical_candidates, store options)
    modes: dict[str, tuple[int, dict[str, Any]]] = {"hybrid": (8, opts), "vector": (0, opts)}
    equal = equal_records_similarity(stream, vecs, a.facts, opts) if a.equal_records else None
    if equal is not None:
        modes[f"vector@{equal:.2f}"] = (0, {**opts, "min_similarity": equal})
    single: dict[str, list[Run]] = {m: [] for m in modes}
    for _ in range(a.repeats):  # interleaved, so a busy moment hits every mode
        for m, (k, o) in modes.items():
            single[m].append(run(stream, vecs, k, 0, **o))
    many = {m: run(stream, vecs, k, a.batch, **o) for m, (k, o) in modes.items()}
    restated = a.facts
    rate = {m: len(stream) / statistics.median(r.cpu for r in single[m]) for m in modes}
    wall = {m: len(stream) / statistics.median(r.wall for r in single[m]) for m in modes}
    print()
    head = f"{'mode':12s} {'requests':>8s} {'req/restated':>12s} {'cands/req':>9s} {'records/facts':>13s}"
    head += f" {'stmt/s cpu':>10s} {'stmt/s wall':>11s}"
    head += f" | {'many req':>8s} {'many/single req':>15s} {'many/single cands':>17s} {'many calls':>10s}"
    head += f" {'many records':>12s}"
    print(head)
    for m in modes:
        r, b = single[m][0], many[m]
        line = f"{m:12s} {r.requests:8d} {r.requests / restated:12.2f} {r.shown / max(r.requests, 1):9.2f}"
        line += f" {r.records / a.facts:13.3f} {rate[m]:10.0f} {wall[m]:11.0f}"
        line += f" | {b.requests:8d} {b.requests / max(r.requests, 1):15.3f} {b.shown / max(r.shown, 1):17.3f}"
        line += f" {b.calls:10d} {b.records / a.facts:12.3f}"
        print(line)
    print()
    print(f"hybrid / vector-only throughput: {rate['hybrid'] / rate['vector']:.2f} (cpu), "
          f"{wall['hybrid'] / wall['vector']:.2f} (wall)")  # fmt: skip
    if equal is not None:
        m = f"vector@{equal:.2f}"
        print(f"hybrid / vector-only at equal records (min_similarity {equal:.2f}): "
              f"{rate['hybrid'] / rate[m]:.2f} (cpu), {wall['hybrid'] / wall[m]:.2f} (wall)")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
