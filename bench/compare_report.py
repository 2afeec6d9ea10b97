"""Turning compare.py's timings into medians, ratios to agentsensus, the
quality bars of docs/design.md, and a printable table."""

from __future__ import annotations

import statistics
from typing import Any, Optional

ENGINE = "agentsensus"
DEPOSITS = ("deposit_1", "deposit_5", "deposit_many_100")


def summarize(
    samples: dict[str, dict[str, list[float]]],
    accuracy: dict[str, dict[str, list[float]]],
    statements: dict[str, int],
) -> dict[str, Any]:
    """Per workload and peer: median ms per call, the ratio of that median to
    agentsensus's (above 1: agentsensus is faster), statements/s for deposits,
    and the mean recall@k for owner-scoped recall."""
    out: dict[str, Any] = {}
    for w, by_peer in samples.items():
        med = {p: statistics.median(ts) * 1e3 for p, ts in by_peer.items() if ts}
        base = med.get(ENGINE)
        row: dict[str, Any] = {}
        for p, m in med.items():
            cell: dict[str, Any] = {"median_ms": m, "ratio": (m / base) if base else None, "samples": len(by_peer[p])}
            if w in statements:
                cell["statements_per_s"] = statements[w] / (m / 1e3)
            acc = accuracy.get(w, {}).get(p)
            if acc:
                cell["recall_at_k"] = sum(acc) / len(acc)
            row[p] = cell
        out[w] = row
    return out


def _bar(bar: str, workload: str, value: Optional[float], target: str, met: Optional[bool]) -> dict[str, Any]:
    return {"bar": bar, "workload": workload, "value": value, "target": target, "met": met}


# The raw HNSW libraries beside usearch: within 1.3x of each is a raised bar (docs/design.md).
ANN_LIMITS = ("usearch", "hnswlib", "faiss")


def bars(table: dict[str, Any], n: int, kinds: Optional[dict[str, str]] = None) -> list[dict[str, Any]]:
    """Every quality bar of docs/design.md this run can measure, with its
    value and verdict. kinds maps a peer to "engine", "peer" or "limit"
    (peers.base.Peer.kind); without it, Chroma is the only peer."""
    kinds = kinds or {"chroma": "peer"}
    out = []

    def ms(w: str, p: str) -> Optional[float]:
        return table.get(w, {}).get(p, {}).get("median_ms")

    for w in DEPOSITS:
        a, raw, glue = ms(w, ENGINE), ms(w, "usearch"), ms(w, "python-glue")
        if a and raw:
            v = raw / a  # throughput of agentsensus / throughput of raw usearch
            out.append(_bar("deposit >= 0.7x raw usearch search+add", w, v, ">= 0.70", v >= 0.7))
        if a and glue:
            v = glue / a
            out.append(_bar("deposit never slower than the Python glue", w, v, ">= 1.00", v >= 1.0))
    for w in (w for w in table if w.startswith("recall_")):
        a, raw, glue = ms(w, ENGINE), ms(w, "usearch"), ms(w, "python-glue")
        if a and raw:
            v = a / raw
            out.append(_bar("recall p50 <= 1.3x one unfiltered usearch search", w, v, "<= 1.30", v <= 1.3))
        r = table[w].get(ENGINE, {}).get("recall_at_k")
        if r is not None:
            out.append(_bar("recall@5 >= 0.99 vs exact owner-scoped scan", w, r, ">= 0.99", r >= 0.99))
        if a and glue:
            v = glue / a
            out.append(_bar("recall >= 3x faster than the Python glue", w, v, ">= 3.00", v >= 3.0))
    for peer in (p for p, k in kinds.items() if k == "peer" and p != "python-glue"):
        for w in table:
            a, other = ms(w, ENGINE), ms(w, peer)
            if a and other:
                v = other / a
                out.append(_bar(f"ahead of {peer}", w, v, "> 1.00", v > 1.0))
    for limit in (x for x in ANN_LIMITS[1:] if x in kinds):
        for w in table:
            a, raw = ms(w, ENGINE), ms(w, limit)
            if a and raw and w != "open":
                v = a / raw  # time of agentsensus / time of the raw library
                out.append(_bar(f"within 1.3x of raw {limit}", w, v, "<= 1.30", v <= 1.3))
    a = ms("open", ENGINE)
    if a is not None:
        out.append(
            _bar(f"open after a clean close < 1 s (bar is at 1M; measured at {n:,})", "open", a / 1e3, "< 1 s", a < 1e3)
        )
    return out


def _fmt_ms(m: float) -> str:
    return f"{m:,.3f}" if m < 1 else f"{m:,.2f}" if m < 100 else f"{m:,.0f}"


def table_markdown(table: dict[str, Any], peers: list[str], statements: dict[str, int]) -> str:
    """Median ms per call, (ratio to agentsensus), and recall@k where scored."""
    head = "| workload | " + " | ".join(peers) + " |"
    lines = [head, "|" + "---|" * (len(peers) + 1)]
    for w, row in table.items():
        label = w + (f" ({statements[w]} stmt)" if w in statements else "")
        cells = []
        for p in peers:
            c = row.get(p)
            if c is None:
                cells.append("")
                continue
            s = f"{_fmt_ms(c['median_ms'])} ms"
            if p != ENGINE and c["ratio"] is not None:
                s += f" ({c['ratio']:.2f}x)"
            if "recall_at_k" in c:
                s += f", r@5 {c['recall_at_k']:.3f}"
            if c["samples"] < max(x["samples"] for x in row.values()):
                s += f", {c['samples']} calls"  # its time budget ran out (compare.BUDGET_S)
            cells.append(s)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bars_markdown(bar_list: list[dict[str, Any]]) -> str:
    lines = ["| bar | workload | measured | target | met |", "|---|---|---|---|---|"]
    for b in bar_list:
        v = "" if b["value"] is None else f"{b['value']:.3f}"
        met = "yes" if b["met"] else "NO"
        lines.append(f"| {b['bar']} | {b['workload']} | {v} | {b['target']} | {met} |")
    return "\n".join(lines)
