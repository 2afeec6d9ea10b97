"""The per-backend metrics of a run, computed the paper's way.

Tables 1, 2 and 8 (store size; sharing and linking over *sim entries*, the
records made after round 0), Table 4's recall counts and merge costs,
Table 5's actions, growth, latency, and two figures no paper had: the
judge's merge precision and recall, and grounding, both computed exactly
from the provenance ledger (`provenance`), which no backend or judge
ever saw.

Ownership counts only agents who appear (who witnessed or did something);
"linked" counts affiliation edges between statements, so a design without
them has linked = 0 and its by-product pointers are counted apart.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable, Sequence

import numpy as np

from .backend import MemoryGraph
from .kernel import RoundLog
from .people import People
from .provenance import Ledger
from .wording import read

__all__ = [
    "percentile",
    "latency_bins",
    "backend_metrics",
    "BIN_ROUNDS",
    "People",
    "name_loss",
    "grounding",
    "say_forms",
    "recall_table",
]

#: Width of a latency bin, in rounds.
BIN_ROUNDS = 5


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
    """How much of what agents said after round 0 drew on long-term memory, and how truly.

    ``drew_on_memory``: the share of says built on a row the speaker held
    from a recall (a retelling, an inference, an answer from memory; a
    question, an intention or a reaction draws on none). ``traced``: of
    those, the share whose row holds a true event (a by-product such as a
    reflection or an insight holds none). ``names_right``: of the traced,
    the share whose named people all took part in (did, were the object of,
    or witnessed) that event.
    """
    says = drew = traced = right = 0
    for log in logs:
        if log.round < 1:
            continue
        for s in log.said:
            says += 1
            if s.basis is None:
                continue
            drew += 1
            event = ledger.event_of(s.basis)
            if event is None:
                continue
            traced += 1
            involved = set(event.actors) | set(event.targets) | set(event.witnesses) | people(event.text)
            right += int(people(s.text) <= involved)
    return {
        "says": says,
        "drew_on_memory": round(drew / says, 4) if says else None,
        "traced": round(traced / drew, 4) if drew else None,
        "names_right": round(right / traced, 4) if traced else None,
    }


def say_forms(logs: Sequence[RoundLog]) -> dict[str, Any]:
    """What kind of statements the says after round 0 were (``utterances.FORMS``; ``other``
    for a model's or a script's say), and the share that retell a memory."""
    forms: Counter[str] = Counter(s.form or "other" for log in logs if log.round >= 1 for s in log.said)
    total = sum(forms.values())
    return {
        "total": total,
        "forms": dict(sorted(forms.items())),
        "retelling_pct": _pct(forms.get("retelling", 0), total),
    }


def recall_table(logs: Sequence[RoundLog], people: People) -> dict[str, Any]:
    """Table 4: recall calls by why they were made, rows returned as hits and
    through expansion, amplification, and whether the person a query was
    about came back among the hits (``q_in_hits``) or only through
    expansion (``q_in_expansion``), over the calls that had such a person."""
    calls = [c for log in logs if log.round >= 1 for c in log.recall_calls]
    hits = sum(len(c.hits) for c in calls)
    edges = sum(len(c.edges) for c in calls)
    about = [c for c in calls if c.subject]
    in_hits = sum(1 for c in about if any(c.subject in people(t) for t in c.hits))
    in_exp = sum(
        1
        for c in about
        if not any(c.subject in people(t) for t in c.hits) and any(c.subject in people(t) for t in c.edges)
    )
    kinds: Counter[str] = Counter(c.kind for c in calls)
    return {
        "calls": len(calls),
        "by_kind": dict(sorted(kinds.items())),
        "empty": sum(1 for c in calls if not c.hits and not c.edges),
        "hits": hits,
        "expansion_rows": edges,
        "hits_plus_expansion": hits + edges,
        "amplification": round((hits + edges) / hits, 3) if hits else None,
        "with_subject": len(about),
        "q_in_hits": round(in_hits / len(about), 4) if about else None,
        "q_in_expansion": round(in_exp / len(about), 4) if about else None,
    }


def name_loss(merges: Sequence[Any], people: People, ledger: Ledger | None = None) -> dict[str, Any]:
    """The merges whose surviving text lost a named person, and what was discarded.

    ``fraction``: the text let go of names a cast member the text kept does
    not (frames included: "I told Horatio" against "Hamlet told me" counts).
    ``core_fraction``: the same over the reported cores only (what was said
    or done, without who reports it: `read`), the paper's
    measure. ``principal``: with the provenance ``ledger``, the share of
    merges whose kept text no longer names the event's principal (its first
    doer or speaker) while the discarded one did.
    """
    changed = lost = lost_core = principal = chars = 0
    for m in merges:
        chars += len(m.discarded)
        if m.kept != m.discarded:
            changed += 1
        lost += int(bool(people(m.discarded) - people(m.kept)))
        lost_core += int(bool(people(read(m.discarded).core) - people(read(m.kept).core)))
        event = ledger.event_of(int(m.survivor)) if ledger is not None else None
        if event is not None and event.actors:
            p = event.actors[0]
            principal += int(p in people(m.discarded) and p not in people(m.kept))
    n = len(merges)
    return {
        "merges": n,
        "lost_name": lost,
        "fraction": round(lost / n, 4) if n else None,
        "core_fraction": round(lost_core / n, 4) if n else None,
        "principal": round(principal / n, 4) if n and ledger is not None else None,
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
    recalls = sum(log.recalls for log in logs)  # every recall call (round 0 makes none)
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
        "says": say_forms(logs),
        "recall": recall_table(logs, people),
        "owned": dict(sorted(owned.items(), key=lambda kv: (-kv[1], kv[0]))),
        "seconds": round(seconds, 3),
    }
    for key, value in stats.items():  # backend-specific extras (reflections, insights, grants, merges)
        if key not in ("records", "shared", "three_plus", "max_owners", "linked"):
            m.setdefault(key, value)
    return m
