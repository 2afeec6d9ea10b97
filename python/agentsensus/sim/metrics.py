"""The per-backend metrics of a run, computed the paper's way.

Tables 1, 2 and 8 (store size; sharing and linking over *sim entries*, the
records made after round 0), Table 4's recall counts and merge costs,
Table 5's actions, growth, latency, and two figures no paper had: the
judge's merge precision and recall, and grounding, both computed exactly
from the provenance ledger (:mod:`.provenance`), which no backend or judge
ever saw.

Ownership counts only agents who appear (who witnessed or did something);
"linked" counts affiliation edges between statements, so a design without
them has linked = 0 and its by-product pointers are counted apart.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Sequence

import numpy as np

from .backend import MemoryGraph
from .kernel import RoundLog
from .provenance import Ledger

__all__ = ["percentile", "latency_bins", "backend_metrics", "BIN_ROUNDS", "People", "name_loss", "grounding"]

#: Width of a latency bin, in rounds.
BIN_ROUNDS = 5

_TITLES = frozenset(
    "king queen lord lady prince princess duke duchess earl sir first second third fourth old young saint "
    "master mistress doctor friar captain gentleman gentlewoman servant messenger player clown the of and "
    "bishop cardinal archbishop count countess marquess lieutenant".split()
)


class People:
    """Finds the cast members a text names: full names, or a word of a name
    that belongs to exactly one of them ("Polonius" for "Lord Polonius")."""

    def __init__(self, cast: Iterable[str]) -> None:
        cast = list(dict.fromkeys(cast))
        owners: dict[str, set[str]] = {}
        for name in cast:
            for tok in name.split():
                if len(tok) >= 3 and tok.lower() not in _TITLES:
                    owners.setdefault(tok, set()).add(name)
        self.spellings = {n: n for n in cast}
        self.spellings.update({t: next(iter(o)) for t, o in owners.items() if len(o) == 1})
        keys = sorted(self.spellings, key=len, reverse=True)
        self._re = re.compile(r"\b(" + "|".join(map(re.escape, keys)) + r")\b") if keys else None

    def __call__(self, text: str) -> frozenset[str]:
        if self._re is None:
            return frozenset()
        return frozenset(self.spellings[m.group(1)] for m in self._re.finditer(text))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), rounded to 0.1 us; ``None`` when empty."""
    if not len(values):
        return None
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 4)


def latency_bins(logs: Sequence[RoundLog], width: int = BIN_ROUNDS) -> list[dict[str, Any]]:
    """p50 / p95 ms per remember and per recall, in bins of ``width`` rounds (round 0 excluded)."""
    sim = [log for log in logs if log.round >= 1]
    out = []
    for start in range(1, (sim[-1].round if sim else 0) + 1, width):
        chunk = [log for log in sim if start <= log.round < start + width]
        rem = [x for log in chunk for x in log.remember_ms]
        rec = [x for log in chunk for x in log.recall_ms]
        out.append(
            {
                "rounds": [start, min(start + width - 1, chunk[-1].round if chunk else start)],
                "remember_ms_p50": percentile(rem, 50),
                "remember_ms_p95": percentile(rem, 95),
                "recall_ms_p50": percentile(rec, 50),
                "recall_ms_p95": percentile(rec, 95),
                "remembers": len(rem),
                "recalls": len(rec),
            }
        )
    return out


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def _ends(edges: Iterable[tuple[int, int]]) -> set[int]:
    out: set[int] = set()
    for a, b in edges:
        out.add(a)
        out.add(b)
    return out


def _sharing(graph: MemoryGraph, ids: Sequence[int], appear: set[str]) -> dict[str, int]:
    sizes = [len(graph.owners[i] & appear) for i in ids]
    linked = _ends(graph.edges)
    pointed = _ends(graph.pointers)
    return {
        "records": len(ids),
        "shared": sum(1 for s in sizes if s >= 2),
        "three_plus": sum(1 for s in sizes if s >= 3),
        "max_owners": max(sizes, default=0),
        "linked": sum(1 for i in ids if i in linked),
        "pointed": sum(1 for i in ids if i in pointed),
    }


def grounding(logs: Sequence[RoundLog], ledger: Ledger, people: People) -> dict[str, Any]:
    """What agents said after round 0, traced through provenance.

    ``traced``: the share of says that retell a recalled row holding a true
    event (a by-product such as a reflection, or nothing recalled, holds
    none). ``names_right``: the share of says whose named people all took
    part in (did, were the object of, or witnessed) the event traced.
    """
    says = traced = right = 0
    for log in logs:
        if log.round < 1:
            continue
        for s in log.said:
            says += 1
            event = ledger.event_of(s.basis) if s.basis is not None else None
            if event is None:
                continue
            traced += 1
            involved = set(event.actors) | set(event.targets) | set(event.witnesses) | people(event.text)
            right += int(people(s.text) <= involved)
    return {
        "says": says,
        "traced": round(traced / says, 4) if says else None,
        "names_right": round(right / says, 4) if says else None,
    }


def name_loss(merges: Sequence[Any], people: People) -> dict[str, Any]:
    """The merges whose surviving text lost a named person, and what was discarded.

    A merge loses a name when the text it let go of names a cast member the
    text it kept does not.
    """
    changed = lost = chars = 0
    for m in merges:
        chars += len(m.discarded)
        if m.kept != m.discarded:
            changed += 1
        lost += int(bool(people(m.discarded) - people(m.kept)))
    n = len(merges)
    return {
        "merges": n,
        "lost_name": lost,
        "fraction": round(lost / n, 4) if n else None,
        "discarded_chars": chars,
        "discarded_chars_per_merge": round(chars / n, 1) if n else None,
    }


def backend_metrics(
    logs: Sequence[RoundLog],
    graph: MemoryGraph,
    stats: dict[str, int],
    ledger: Ledger,
    appear: set[str],
    people: People,
    seconds: float,
) -> dict[str, Any]:
    """Everything the report shows about one backend's run."""
    sediment = logs[0].records if logs and logs[0].round == 0 else 0
    all_ids = sorted(graph.owners)
    sim_ids = [i for i in all_ids if graph.rounds.get(i, 0) >= 1]
    whole = _sharing(graph, all_ids, appear)
    sim = _sharing(graph, sim_ids, appear)
    total = len(all_ids)
    sim_logs = [log for log in logs if log.round >= 1]
    rem = [x for log in sim_logs for x in log.remember_ms]
    rec = [x for log in logs for x in log.recall_ms]
    recalls = sum(log.recalls for log in logs)
    hits = sum(log.hits for log in logs)
    expanded = sum(log.expanded for log in logs)
    edge_rows = sum(log.edge_rows for log in logs)
    owned: Counter[str] = Counter()
    for owners in graph.owners.values():
        owned.update(owners & appear)
    actions = Counter(a.kind for log in sim_logs for a in log.actions if a.agent)
    m: dict[str, Any] = {
        "sediment": sediment,
        "sim": total - sediment,
        "total": total,
        # Over every record (round 0 included), as before:
        "shared": whole["shared"],
        "three_plus": whole["three_plus"],
        "max_owners": whole["max_owners"],
        "linked": whole["linked"],
        "pointed": whole["pointed"],
        "shared_pct": _pct(whole["shared"], total),
        "three_plus_pct": _pct(whole["three_plus"], total),
        "linked_pct": _pct(whole["linked"], total),
        # Over sim entries, the paper's Tables 2 and 8:
        "sim_shared": sim["shared"],
        "sim_three_plus": sim["three_plus"],
        "sim_max_owners": sim["max_owners"],
        "sim_linked": sim["linked"],
        "sim_pointed": sim["pointed"],
        "sim_shared_pct": _pct(sim["shared"], len(sim_ids)),
        "sim_three_plus_pct": _pct(sim["three_plus"], len(sim_ids)),
        "sim_linked_pct": _pct(sim["linked"], len(sim_ids)),
        "sim_pointed_pct": _pct(sim["pointed"], len(sim_ids)),
        "remember_ms_p50": percentile(rem, 50),
        "remember_ms_p95": percentile(rem, 95),
        "recall_ms_p50": percentile(rec, 50),
        "recall_ms_p95": percentile(rec, 95),
        "recalls": recalls,
        "hits": hits,
        "expansion_rows": edge_rows,
        "amplification": round((hits + edge_rows) / hits, 3) if hits else None,
        "expanded_frac": round(expanded / recalls, 4) if recalls else 0.0,
        "linked_per_expanding_call": round(edge_rows / expanded, 3) if expanded else 0.0,
        "deposits": sum(log.deposits for log in logs),
        "statements": sum(log.statements for log in logs),
        "growth": [log.records for log in logs],
        "latency_bins": latency_bins(logs),
        "actions": {k: actions.get(k, 0) for k in ("say", "read_thread", "observe", "move", "act_on", "ponder")},
        "grounding": grounding(logs, ledger, people),
        "owned": dict(sorted(owned.items(), key=lambda kv: (-kv[1], kv[0]))),
        "seconds": round(seconds, 3),
    }
    for key, value in stats.items():  # backend-specific extras (reflections, insights, grants, merges)
        if key not in ("records", "shared", "three_plus", "max_owners", "linked"):
            m.setdefault(key, value)
    return m
