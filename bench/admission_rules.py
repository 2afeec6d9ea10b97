"""Which lexical hits could be kept from the judge: every admission rule of
one family, scored on the judge requests of ``judge_requests.py``'s stream.

The stream (``judge_requests.make_stream``) is deposited one statement at
a time at the store's defaults with the counting oracle, which records for
every request each candidate: its cosine to the statement, its BM25 score,
and whether it is the statement's fact. Each statement's best possible BM25
score comes from the same ``Engine.lexical`` call that found its hits (twice
the most-of score it returns). A candidate below ``min_similarity`` is one
only the lexical step found (a lexical hit).

A rule keeps a lexical hit when its cosine is at least ``a`` or its share
of the statement's best score is at least ``b`` (either side may be off);
vector candidates are always kept. Under a rule a statement is sent to the
judge when it keeps a candidate, and a restatement is missed when its fact's
record is not kept (or was not a candidate at all). The figures are offline:
a missed restatement would have made a record that later statements could
meet, which the recorded run does not have, so they can differ from a run
with the rule by a few requests. ``always`` is the defaults' own rule, and
its figures are the recorded run's.

For each seed it prints the rules on the frontier (no other rule sends
fewer requests and misses fewer restatements), the fewest requests of a rule
missing at most 1% of the facts, and the fewest restatements missed by a
rule sending at most 1.3 requests per restatement: the two bars of
``docs/performance.md``'s judge-requests section (``--records-bar``,
``--requests-bar``), which hold together only where a rule meets both. The
rules meeting both on every seed are then scored on ``merge_quality.py``'s
Hamlet world (``--hamlet`` speeches, the simulation's wording, words varied
and not, at the same ``min_similarity``): how many of its restatements each
misses, against the defaults.

    python bench/admission_rules.py                       # hash vectors, seeds 7, 11, 12
    python bench/admission_rules.py --embedder minilm     # with the minilm extra
    python bench/admission_rules.py --facts 60 --seeds 7
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from agentsensus import JudgeRequest, Store
from agentsensus.embedders import from_name
from judge_requests import keep_first, make_stream

MIN_SIMILARITY = 0.75  # the store's default: below it a candidate is a lexical hit
ALWAYS = -math.inf  # a cosine every hit has: the defaults' rule
COSINES = [None, ALWAYS] + [round(0.20 + 0.05 * i, 2) for i in range(12)]  # a: off, always, 0.20 .. 0.75
SHARES = [round(0.35 + 0.05 * i, 2) for i in range(14)] + [None]  # b: 0.35 .. 1.00, off


@dataclass(frozen=True)
class Cand:
    cosine: float
    share: float  # BM25 over the statement's best possible score
    true: bool  # the statement's fact's record


@dataclass(frozen=True)
class Request:
    restatement: bool
    cands: tuple[Cand, ...]


class Recorder:
    """An oracle judge (it knows each statement's fact and each record's)
    recording every candidate of every request."""

    def __init__(self, fact_of: dict[tuple[str, str], int], best: dict[str, float]) -> None:
        self.fact_of, self.best = fact_of, best
        self.record_fact: dict[int, int] = {}  # filled as records are made
        self.requests: list[Request] = []

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        out = []
        for r in requests:
            want = self.fact_of[(r.owner, r.statement)]
            best = self.best.get(r.statement, math.inf)
            cands = tuple(
                Cand(c.score, (c.lexical_score or 0.0) / best, self.record_fact.get(c.id) == want) for c in r.candidates
            )
            self.requests.append(Request(False, cands))  # whether it restates: set by record()
            out.append(next((c.id for c in r.candidates if self.record_fact.get(c.id) == want), None))
        return out


class BestScores:
    """The engine, recording each statement's best possible BM25 score from
    the lexical call that searched for it (most-of is half of it)."""

    def __init__(self, engine: Any, best: dict[str, float]) -> None:
        self._engine, self._best = engine, best

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def lexical(self, vectors: Any, texts: list[str], *args: Any) -> Any:
        answer = self._engine.lexical(vectors, texts, *args)
        for text, most_of in zip(texts, answer[-1]):
            self._best[text] = 2 * most_of
        return answer


def record(world: list[tuple[str, str, int]], vecs: np.ndarray) -> tuple[list[Request], int]:
    """Every judge request of the world's statements, (witness, text, fact),
    deposited one at a time at the defaults, and how many restatements were
    missed there (a statement of a fact with a record that made a record)."""
    best: dict[str, float] = {}
    judge = Recorder({(w, t): f for w, t, f in world}, best)
    seen: set[int] = set()
    restating: list[bool] = []
    missed = 0
    with tempfile.TemporaryDirectory() as d:
        with Store(os.path.join(d, "s"), dim=vecs.shape[1], judge=judge, merge_policy=keep_first,
                   sync=False, exact_cutoff=1 << 17) as s:  # fmt: skip
            s._engine = BestScores(s._engine, best)
            for (witness, text, f), v in zip(world, vecs):
                before = len(judge.requests)
                dep = s.deposit(witness, [text], v[None])
                if len(judge.requests) > before:
                    restating.append(f in seen)
                if not dep.merged[0]:
                    missed += f in seen
                    judge.record_fact[dep.ids[0]] = f
                seen.add(f)
    return [Request(r, q.cands) for r, q in zip(restating, judge.requests)], missed


def keeps(c: Cand, a: Optional[float], b: Optional[float]) -> bool:
    if c.cosine >= MIN_SIMILARITY:
        return True
    return (a is not None and c.cosine >= a) or (b is not None and c.share >= b)


def score(requests: list[Request], missed_before: int, a: Optional[float], b: Optional[float]) -> tuple[int, int]:
    """(requests sent, restatements missed) under the rule (a, b)."""
    sent, missed = 0, missed_before
    for q in requests:
        kept = [c for c in q.cands if keeps(c, a, b)]
        sent += bool(kept)
        if q.restatement and any(c.true for c in q.cands) and not any(c.true for c in kept):
            missed += 1
    return sent, missed


def name(a: Optional[float], b: Optional[float]) -> str:
    if a == ALWAYS:
        return "always (the defaults)"
    parts = ([] if a is None else [f"cosine >= {a:.2f}"]) + ([] if b is None else [f"share >= {b:.2f}"])
    return " or ".join(parts) or "never (vector candidates only)"


Rule = tuple[Optional[float], Optional[float]]


def frontier(rules: dict[Rule, tuple[int, int]]) -> list[tuple[Rule, tuple[int, int]]]:
    """The rules no other rule beats on both counts, fewest requests first
    (the first-listed rule of each pair of counts)."""
    vals = set(rules.values())
    best = sorted(v for v in vals if not any(w[0] <= v[0] and w[1] <= v[1] and w != v for w in vals))
    return [(next(r for r, x in rules.items() if x == v), v) for v in best]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--facts", type=int, default=250)
    p.add_argument("--seeds", default="7,11,12", help="comma-separated stream seeds")
    p.add_argument("--embedder", default="hash", help="hash (default, no model) or minilm (the minilm extra)")
    p.add_argument(
        "--hamlet", type=int, default=370, metavar="SPEECHES",
        help="also score the rules meeting both bars on merge_quality.py's world of this many speeches, with "
        "words varied (0.5) and not (0): how many of its restatements they miss (0: skip)",
    )  # fmt: skip
    p.add_argument("--show", type=int, default=5, help="Hamlet rules to print, fewest missed first")
    p.add_argument("--requests-bar", type=float, default=1.3, help="requests per restatement at most (default 1.3)")
    p.add_argument("--records-bar", type=float, default=0.01, help="restatements missed per fact at most (0.01)")
    a = p.parse_args()
    if a.facts < 10 or a.requests_bar <= 0 or a.records_bar < 0:
        p.error("--facts must be at least 10, --requests-bar above 0 and --records-bar at least 0")
    embed = from_name(a.embedder)
    facts, allowed, most = a.facts, int(a.facts * a.records_bar + 1e-9), a.requests_bar * a.facts
    print(f"embedder: {a.embedder}; {facts} facts told twice; a lexical hit is below cosine {MIN_SIMILARITY}")
    meeting: Optional[set[Rule]] = None  # the rules meeting both bars on every seed
    for seed in (int(x) for x in a.seeds.split(",")):
        stream = make_stream(facts, seed)
        vecs = np.asarray(embed([t for _, t, _ in stream]), dtype=np.float32)
        requests, missed_before = record(stream, vecs)
        rules = {(x, y): score(requests, missed_before, x, y) for x in COSINES for y in SHARES}
        print(f"\nseed {seed}: {len(requests)} requests at the defaults ({len(requests) / facts:.2f} per "
              f"restatement), {missed_before} restatements missed there")  # fmt: skip
        print(f"  {'rule on the frontier (a lexical hit is kept when)':52s} {'req/restated':>12s} {'missed':>6s}")
        for rule, (sent, missed) in frontier(rules):
            print(f"  {name(*rule):52s} {sent / facts:12.2f} {missed:6d}")
        both = {r for r, (sent, missed) in rules.items() if sent <= most and missed <= allowed}
        meeting = both if meeting is None else meeting & both
        fewest = min((v[0] for v in rules.values() if v[1] <= allowed), default=None)
        least_missed = min((v[1] for v in rules.values() if v[0] <= most), default=None)
        print(f"  fewest requests missing at most {allowed}: "
              + ("none" if fewest is None else f"{fewest / facts:.2f} per restatement")
              + f"; fewest missed at most {a.requests_bar} requests per restatement: {least_missed}"
              + f"; rules meeting both: {len(both)}")  # fmt: skip
    print(f"\nrules meeting both bars on every seed: {len(meeting or ())}")
    if not meeting or a.hamlet <= 0:
        return
    from merge_quality import build_world

    for variation in (0.0, 0.5):
        world, events = build_world("hamlet", a.hamlet, "sim", variation)
        stmts = [(st.witness, st.text, st.event) for st in world]
        vecs = np.asarray(embed([t for _, t, _ in stmts]), dtype=np.float32)
        requests, missed_before = record(stmts, vecs)
        print(f"\nHamlet, {a.hamlet} speeches, variation {variation}: {len(stmts)} statements, {events} facts; "
              f"the defaults miss {missed_before} restatements")  # fmt: skip
        scored = sorted((score(requests, missed_before, *r)[1], name(*r)) for r in meeting)
        for missed, rule in scored[: a.show]:
            print(f"  {rule:52s} misses {missed}")
        print(f"  (the best {min(a.show, len(scored))} of the {len(scored)} rules meeting both bars on the streams)")


if __name__ == "__main__":
    main()
