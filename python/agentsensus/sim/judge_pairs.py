"""Labelled pairs of accounts from a play, and a judge scored on them.

Three kinds of pair, built from the play's replayed source with the
simulation's own accounts (`account`):

- ``same``: two witnesses' accounts of one statement of one speech: the same
  fact (a judge that keeps them apart *misses*);
- ``other_speech``: accounts of two different speeches of one scene:
  different facts;
- ``swapped``: one act or speech against the same with who did what to whom
  swapped ("Hamlet tells Ophelia ..." / "Ophelia tells Hamlet ...", "Ghost
  beckons Hamlet." / "Hamlet beckons Ghost."), told by a third witness:
  different facts. Speeches are swapped between the speaker and one listener;
  acts between the doer and the one they were done to when the act's words
  name both, else between the doer and another witness.

`score_pairs` asks a judge about every pair as the store would (the
second account as a ``JudgeRequest``'s statement, the first as its one
candidate) and gives, per kind, the pairs, the merges and the rate of wrong
answers: missed merges for ``same``, wrong merges for the others. Pairs are
drawn with a seeded random stream: the same play and seed give the same pairs.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..records import JudgeRequest, Memory
from .accounts import account
from .sediment import SourceReplay
from .variation import Variation
from .world import Event

__all__ = ["Pair", "KINDS", "build_pairs", "score_pairs", "judge_pairs"]

#: The kinds of pair, and whether their two accounts state the same fact.
KINDS = {"same": True, "other_speech": False, "swapped": False}
#: Pairs drawn per kind at most.
PER_KIND = 300


@dataclass(frozen=True)
class Pair:
    """Two accounts (``a`` by ``owner_a``, ``b`` by ``owner_b``) and their label.

    ``kind`` is one of `KINDS`; ``same`` whether they state one fact;
    ``what`` is ``"say"`` or ``"act"``: what the accounts report.
    """

    kind: str
    a: str
    owner_a: str
    b: str
    owner_b: str
    same: bool
    what: str


def _events(replay: SourceReplay) -> list[Event]:
    return [e for batch in replay.batches for e in batch]


def _swap_names(text: str, x: str, y: str) -> str | None:
    """``text`` with the names ``x`` and ``y`` exchanged; ``None`` unless it names ``x``."""
    if not re.search(rf"\b{re.escape(x)}\b", text):
        return None
    return re.sub(rf"\b({re.escape(x)}|{re.escape(y)})\b", lambda m: y if m.group(1) == x else x, text)


def _same(ev: Event, rng: random.Random, v: Variation) -> Pair | None:
    """Two witnesses' accounts of one statement of a speech."""
    said = {w: dict((c, t) for t, c in reversed(account(ev, w, v))) for w in ev.witnesses}
    for _ in range(4):
        if len(said) < 2:
            return None
        w1, w2 = rng.sample(sorted(said), 2)
        shared = sorted(set(said[w1]) & set(said[w2]))
        if shared:
            c = rng.choice(shared)
            return Pair("same", said[w1][c], w1, said[w2][c], w2, True, "say")
    return None


def _other(e1: Event, e2: Event, rng: random.Random, v: Variation) -> Pair | None:
    """Accounts of two different speeches of one scene, by witnesses of each."""
    w1, w2 = rng.choice(sorted(e1.witnesses)), rng.choice(sorted(e2.witnesses))
    s1, s2 = account(e1, w1, v), account(e2, w2, v)
    if not s1 or not s2:
        return None
    return Pair("other_speech", rng.choice(s1)[0], w1, rng.choice(s2)[0], w2, False, "say")


def _swapped(ev: Event, rng: random.Random, v: Variation) -> Pair | None:
    """``ev`` against itself with doer and done-to (speaker and listener) exchanged, told by a third witness."""
    if len(ev.actors) != 1:
        return None
    doer = ev.actors[0]
    if ev.kind == "say":
        listeners = sorted(w for w in ev.witnesses if w != doer)
        if len(listeners) < 2:
            return None
        other = rng.choice(listeners)
        told = replace(ev, targets=(other,))
        swapped = replace(ev, actors=(other,), targets=(doer,))
    elif ev.kind == "act":
        other = ev.targets[0] if len(ev.targets) == 1 and ev.targets[0] in ev.text else ""
        if not other:
            present = sorted(w for w in ev.witnesses if w != doer)
            if not present:
                return None
            other = rng.choice(present)
        text = _swap_names(ev.text, doer, other)
        if text is None or text == ev.text:
            return None
        told = ev
        swapped = replace(ev, actors=(other,), targets=tuple(doer if t == other else t for t in ev.targets), text=text)
    else:
        return None
    thirds = sorted(w for w in ev.witnesses if w not in (doer, other))
    if not thirds:
        return None
    w1, w2 = rng.choice(thirds), rng.choice(thirds)
    s1, s2 = account(told, w1, v), account(swapped, w2, v)
    by_clause = dict((c, t) for t, c in reversed(s2))
    shared = [(t, c) for t, c in s1 if c in by_clause]
    if not shared:
        return None
    t1, c = rng.choice(shared)
    return Pair("swapped", t1, w1, by_clause[c], w2, False, ev.kind)


def build_pairs(replay: SourceReplay, variation: Variation, *, per_kind: int = PER_KIND) -> list[Pair]:
    """Labelled pairs of every kind of `KINDS` from a play's replayed
    source, at most ``per_kind`` of each, worded by ``variation`` (seeded by its seed)."""
    if per_kind < 1:
        raise ValueError(f"per_kind must be at least 1, got {per_kind}")
    events = _events(replay)
    seed = variation.seed
    says = [e for e in events if e.kind == "say" and e.text.strip()]
    neighbours = [(a, b) for a, b in zip(says, says[1:]) if a.when == b.when and a.text != b.text]
    out: list[Pair] = []
    # Events are drawn in a seeded order and worded only until a kind has its pairs.
    out += _first(per_kind, (_same(e, _rng(seed, "same", e), variation) for e in _shuffled(says, seed, "same")))
    # Neighbouring speeches of one scene: the hardest different facts (same people, same place, same time).
    out += _first(
        per_kind,
        (_other(a, b, _rng(seed, "other", a), variation) for a, b in _shuffled(neighbours, seed, "other")),
    )
    # Every act that can be swapped first (a play has few), then speeches.
    acts = _first(per_kind, (_swapped(e, _rng(seed, "swap", e), variation) for e in events if e.kind == "act"))
    out += acts
    if len(acts) < per_kind:
        speeches = (_swapped(e, _rng(seed, "swap", e), variation) for e in _shuffled(says, seed, "swap"))
        out += _first(per_kind - len(acts), speeches)
    return out


def _rng(seed: int, kind: str, ev: Event) -> random.Random:
    return random.Random(f"{seed}-{kind}-{ev.seq}")


def _shuffled(items: Sequence[Any], seed: int, kind: str) -> list[Any]:
    out = list(items)
    random.Random(f"{seed}-{kind}").shuffle(out)
    return out


def _first(n: int, pairs: Iterable[Pair | None]) -> list[Pair]:
    out: list[Pair] = []
    for p in pairs:
        if p is not None:
            out.append(p)
            if len(out) >= n:
                break
    return out


def score_pairs(
    pairs: Sequence[Pair],
    judge: Callable[[list[Any]], Sequence[int | None]],
    embed: Callable[[list[str]], Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Ask ``judge`` about every pair (one call); per kind of `KINDS`:
    ``pairs``, ``merges`` and ``miss_rate`` (``same``) or ``wrong_merge_rate``
    (the others; ``swapped`` also split into ``says`` and ``acts``).

    A judge with a ``read`` method (the lexical judge's word weights) first
    reads every account of the pairs, as a store's judge has read the
    statements before it. With ``embed``, each candidate carries its cosine
    similarity as ``score``, as the store's candidates do.
    """
    reader = getattr(judge, "read", None)
    if callable(reader):
        for p in pairs:
            reader(p.a)
            reader(p.b)
    scores: list[float | None] = [None] * len(pairs)
    if embed is not None and pairs:
        va = np.asarray(embed([p.a for p in pairs]), dtype=np.float32)
        vb = np.asarray(embed([p.b for p in pairs]), dtype=np.float32)
        scores = [float(x) for x in np.einsum("ij,ij->i", va, vb)]
    requests = [
        JudgeRequest(p.b, p.owner_b, [Memory(id=1, text=p.a, owners=frozenset({p.owner_a}), round=0, score=s)])
        for p, s in zip(pairs, scores)
    ]
    answers = list(judge(requests)) if requests else []
    out: dict[str, dict[str, Any]] = {}
    for kind, same in KINDS.items():
        got = [(p, a is not None) for p, a in zip(pairs, answers) if p.kind == kind]
        out[kind] = _rates(got, same)
        if kind == "swapped":
            for what, key in (("say", "says"), ("act", "acts")):
                out[kind][key] = _rates([(p, m) for p, m in got if p.what == what], same)
    return out


def _rates(got: list[tuple[Pair, bool]], same: bool) -> dict[str, Any]:
    n = len(got)
    merges = sum(m for _, m in got)
    wrong = n - merges if same else merges
    key = "miss_rate" if same else "wrong_merge_rate"
    return {"pairs": n, "merges": merges, key: round(wrong / n, 4) if n else None}


def judge_pairs(
    replay: SourceReplay,
    judge_factory: Callable[[], Callable[[list[Any]], Sequence[int | None]]],
    *,
    levels: Sequence[float] = (0.0, 0.5, 1.0),
    seed: int = 0,
    timestamps: bool = False,
    embed: Callable[[list[str]], Any] | None = None,
    per_kind: int = PER_KIND,
) -> list[dict[str, Any]]:
    """`score_pairs` of a fresh ``judge_factory()`` on the pairs of
    `build_pairs` at each variation level: one entry per level,
    ``{"variation", "timestamps", "kinds": {kind: {...}}}``."""
    out = []
    for level in levels:
        v = Variation(float(level), seed, timestamps=timestamps)
        pairs = build_pairs(replay, v, per_kind=per_kind)
        out.append(
            {
                "variation": float(level),
                "timestamps": timestamps,
                "kinds": score_pairs(pairs, judge_factory(), embed),
            }
        )
    return out
