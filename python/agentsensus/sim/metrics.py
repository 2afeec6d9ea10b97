"""The per-backend metrics of a run (the paper's Tables 1, 2 and 8, growth and
latency), computed from the kernel's round logs and the backend's own counts."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .kernel import RoundLog

__all__ = ["percentile", "latency_bins", "backend_metrics", "BIN_ROUNDS"]

#: Width of a latency bin, in rounds.
BIN_ROUNDS = 5


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), rounded to microseconds; ``None`` when empty."""
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
        out.append({
            "rounds": [start, min(start + width - 1, chunk[-1].round if chunk else start)],
            "remember_ms_p50": percentile(rem, 50), "remember_ms_p95": percentile(rem, 95),
            "recall_ms_p50": percentile(rec, 50), "recall_ms_p95": percentile(rec, 95),
            "remembers": len(rem), "recalls": len(rec),
        })
    return out


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole else 0.0


def backend_metrics(logs: Sequence[RoundLog], stats: dict[str, int], seconds: float) -> dict[str, Any]:
    """Everything the report shows about one backend's run."""
    sediment = logs[0].records if logs and logs[0].round == 0 else 0
    total = int(stats["records"])
    sim_logs = [log for log in logs if log.round >= 1]
    rem = [x for log in sim_logs for x in log.remember_ms]
    rec = [x for log in logs for x in log.recall_ms]
    recalls = sum(log.recalls for log in logs)
    expanded = sum(log.expanded for log in logs)
    edge_rows = sum(log.edge_rows for log in logs)
    m: dict[str, Any] = {
        "sediment": sediment,
        "sim": total - sediment,
        "total": total,
        "shared": int(stats["shared"]),
        "three_plus": int(stats["three_plus"]),
        "max_owners": int(stats["max_owners"]),
        "linked": int(stats["linked"]),
        "shared_pct": _pct(int(stats["shared"]), total),
        "three_plus_pct": _pct(int(stats["three_plus"]), total),
        "linked_pct": _pct(int(stats["linked"]), total),
        "remember_ms_p50": percentile(rem, 50),
        "remember_ms_p95": percentile(rem, 95),
        "recall_ms_p50": percentile(rec, 50),
        "recall_ms_p95": percentile(rec, 95),
        "recalls": recalls,
        "expanded_frac": round(expanded / recalls, 4) if recalls else 0.0,
        "linked_per_expanding_call": round(edge_rows / expanded, 3) if expanded else 0.0,
        "deposits": sum(log.deposits for log in logs),
        "statements": sum(log.statements for log in logs),
        "growth": [log.records for log in logs],
        "latency_bins": latency_bins(logs),
        "seconds": round(seconds, 3),
    }
    for key, value in stats.items():  # backend-specific extras (reflections, insights, grants)
        m.setdefault(key, value)
    m.pop("records", None)
    return m
