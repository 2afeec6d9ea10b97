"""How cost grows with the store, each beside its raw limit, at several sizes
(default 10k, 100k and 1M records), measured in one run; writes the numbers
as JSON and draws them as one SVG (log-log panels, written by hand).

    python bench/plot_scale.py                                   # clustered corpus, 10k/100k/1M
    python bench/plot_scale.py --sizes 10000,100000 --kind hard  # the near-tie corpus
    python bench/plot_scale.py --replot bench/results/scale-*.json --svg docs/img/scale.svg

Per size, on the cached store of bench/scale_stores.py (built on first use):
- recall: p50 of 200 warm owner-scoped recalls (k=5, expand) per
  selectivity, recall@5 against an exact owner-scoped scan (numpy); raw
  limit: one unfiltered search of the same index file by the usearch package
  (its body, viewed), interleaved query by query, after a warm-up pass of
  both;
- deposit: p50 of single-statement deposits (no judge, no merge) into a
  copy; raw limit: usearch search(k=8) + add on the same index, loaded;
- open: open + the first 1%-owner recall, median of 5; raw limit: usearch
  viewing the index file + one search;
- verify: one ``Store.verify()``; raw limit: reading every key and value of
  every table with the lmdb package;
- sizes: index.usearch and data.mdb; raw limit: the f32 vectors alone;
- cold start and peak memory (a fresh process each): the page cache dropped
  (``/proc/sys/vm/drop_caches``, as root) or, where that is refused, a fresh
  copy of the store files; then the first 200 recalls after open (rotating
  over the selectivities) against the warm p50 of the same 200 (with how
  long the 200 took and the p50 of each half, as the store warms while they
  run), and the peak RSS of that process after 200 recalls at every
  selectivity.
Runs against the installed package.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from html import escape

import numpy as np
from agentsensus import Store, judges
from datasets import DIM, SCALE_SELECTIVITY, corpus_owned, corpus_queries, exact_top, progress
from scale_stores import corpus_store

HERE = os.path.dirname(os.path.abspath(__file__))
K = 5
QUERIES = 200
HEADER = 8 + 48  # the index file's magic and IndexHeader (cpp/src/format/schema.hpp) before usearch's body


def p50(xs: list[float]) -> float:
    return float(statistics.median(xs))


def raw_index_file(path: str) -> str:
    """usearch's own file: the store's index body without our header (cached
    beside the store, keyed by the index file's size and mtime)."""
    src = os.path.join(path, "index.usearch")
    st = os.stat(src)
    dest = f"{path}-raw-{st.st_size}-{st.st_mtime_ns}.usearch"
    if not os.path.exists(dest):
        with open(src, "rb") as f, open(dest + ".tmp", "wb") as g:
            f.seek(HEADER)
            shutil.copyfileobj(f, g, 1 << 24)
        os.replace(dest + ".tmp", dest)
    return dest


def view_raw(path: str, *, view: bool = True):
    from usearch.index import Index

    return Index.restore(raw_index_file(path), view=view)


def measure_recall(n: int, kind: str, path: str, width: int = 64) -> dict:
    qs = corpus_queries(n, QUERIES, seed=97, kind=kind)
    raw = view_raw(path)
    raw.expansion_search = 64
    out = {}
    with Store(path, create=False, readonly=True, expansion_search=width) as s:
        for share, owner in SCALE_SELECTIVITY.items():
            truth = exact_top(n, owner, qs, kind=kind)
            got = [{m.id for m in s.recall(owner, q, k=K) if m.via == "hit"} for q in qs]  # warm-up pass
            for q in qs:  # and the raw side's: after a cold-cache measure its file's pages are cold too
                raw.search(q, K)
            t_eng, t_raw = [], []
            for q in qs:
                t0 = time.perf_counter()
                s.recall(owner, q, k=K)
                t1 = time.perf_counter()
                raw.search(q, K)
                t2 = time.perf_counter()
                t_eng.append(t1 - t0)
                t_raw.append(t2 - t1)
            r5 = float(np.mean([len(g & t) / K for g, t in zip(got, truth)]))
            out[share] = {
                "owned": int(len(corpus_owned(n, owner))),
                "p50_ms": p50(t_eng) * 1e3,
                "raw_p50_ms": p50(t_raw) * 1e3,
                "ratio": p50(t_eng) / p50(t_raw),
                "recall_at_5": r5,
            }
            print(f"  recall {share}: {out[share]}", file=sys.stderr)
    return out


def measure_open(n: int, kind: str, path: str) -> dict:
    q = corpus_queries(n, 1, seed=5, kind=kind)[0]
    eng, raw = [], []
    for _ in range(6):
        t0 = time.perf_counter()
        with Store(path, create=False, readonly=True) as s:
            s.recall("a7", q, k=K)
        t1 = time.perf_counter()
        ix = view_raw(path)
        ix.search(q, K)
        t2 = time.perf_counter()
        del ix
        eng.append(t1 - t0)
        raw.append(t2 - t1)
    eng, raw = eng[1:], raw[1:]  # the first of each is a warm-up
    return {"ms": p50(eng) * 1e3, "raw_ms": p50(raw) * 1e3}


def measure_deposit(n: int, path: str, rounds: int) -> dict:
    copy = path + "-deposit"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy)
    # Written back before timing: at 1M the copy's 3 GB were still going to
    # disk while the deposits ran (6.10 ms a deposit, 4.54 ms after a flush).
    os.sync()
    fresh = np.random.default_rng(2000).standard_normal((2 * rounds + 2, DIM)).astype(np.float32)
    fresh /= np.linalg.norm(fresh, axis=1, keepdims=True)
    eng, raw = [], []
    try:
        ix = view_raw(path, view=False)
        with Store(copy, create=False, judge=judges.never, sync=False) as s:
            s.deposit("a0", ["warm-up"], fresh[-1:])
            ix.search(fresh[-2], 8)
            ix.add(10**12, fresh[-2])
            for r in range(rounds):
                t0 = time.perf_counter()
                s.deposit("a0", [f"fresh {r}"], fresh[r : r + 1])
                t1 = time.perf_counter()
                v = fresh[rounds + r]
                ix.search(v, 8)
                ix.add(10**12 + 1 + r, v)
                t2 = time.perf_counter()
                eng.append(t1 - t0)
                raw.append(t2 - t1)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return {"ms": p50(eng) * 1e3, "raw_ms": p50(raw) * 1e3}


def measure_verify(path: str) -> dict:
    import lmdb

    with Store(path, create=False, readonly=True) as s:
        t0 = time.perf_counter()
        problems = s.verify()
        t1 = time.perf_counter()
    assert problems == [], problems[:3]
    env = lmdb.open(path, readonly=True, lock=False, max_dbs=64, subdir=True)
    t2 = time.perf_counter()
    total = 0
    with env.begin() as txn:
        names = [k for k, _ in txn.cursor()]
        for name in names:
            try:
                db = env.open_db(name, txn=txn, create=False)
            except lmdb.Error:
                continue  # a key of the main table that names no table
            for k, v in txn.cursor(db):
                total += len(k) + len(v)
    t3 = time.perf_counter()
    env.close()
    return {"ms": (t1 - t0) * 1e3, "raw_ms": (t3 - t2) * 1e3, "bytes_read_raw": total}


COLD_CHILD = r"""
import json, resource, sys, time
import numpy as np
from agentsensus import Store
from datasets import SCALE_SELECTIVITY, corpus_queries
n, kind, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
owners = list(SCALE_SELECTIVITY.values())
qs = corpus_queries(n, 200, seed=11, kind=kind)
t0 = time.perf_counter()
s = Store(path, create=False, readonly=True)
t_open = time.perf_counter() - t0
cold = []
for j, q in enumerate(qs):
    t = time.perf_counter(); s.recall(owners[j % len(owners)], q, k=5); cold.append(time.perf_counter() - t)
warm = []
for j, q in enumerate(qs):
    t = time.perf_counter(); s.recall(owners[j % len(owners)], q, k=5); warm.append(time.perf_counter() - t)
for owner in owners:
    for q in qs:
        s.recall(owner, q, k=5)
# Resident memory by kind (Linux): the process's own (anonymous) against
# the file pages it maps (the index and data.mdb, which count in RSS once
# the page cache holds them, and which the kernel may drop at any time).
kinds = {}
try:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                kinds[line.split(":")[0]] = int(line.split()[1])
except OSError:
    pass
s.close()
print(json.dumps({"open_s": t_open, "cold": cold, "warm": warm, "rss_kib": kinds,
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def drop_page_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def measure_cold(n: int, kind: str, path: str, drop: bool) -> dict:
    target, how = path, "page cache dropped"
    if not (drop and drop_page_cache()):
        target, how = path + "-cold", "fresh copy of the store files (page cache not dropped)"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(path, target)
    try:
        done = subprocess.run(
            [sys.executable, "-c", COLD_CHILD, str(n), kind, target],
            capture_output=True,
            text=True,
            check=True,
            cwd=HERE,
        )
    finally:
        if target != path:
            shutil.rmtree(target, ignore_errors=True)
    r = json.loads(done.stdout)
    warm = p50(r["warm"])
    return {
        "how": how,
        "open_ms": r["open_s"] * 1e3,
        "first_200_p50_ms": p50(r["cold"]) * 1e3,
        "first_200_mean_ms": float(np.mean(r["cold"])) * 1e3,
        "first_200_max_ms": max(r["cold"]) * 1e3,
        # How long the 200 took, and the p50 of each half: the store warms
        # while they run (data.mdb is read ahead after open, cpp/src/lmdb/prefetch.hpp).
        "first_200_span_s": float(np.sum(r["cold"])),
        "first_100_p50_ms": p50(r["cold"][:100]) * 1e3,
        "second_100_p50_ms": p50(r["cold"][100:]) * 1e3,
        "warm_p50_ms": warm * 1e3,
        "ratio_p50": p50(r["cold"]) / warm,
        "ratio_mean": float(np.mean(r["cold"])) / warm,
        "peak_rss_mib": r["peak_rss_kib"] / 1024,
        # after every recall, before close (None where /proc/self/status is not there)
        "rss_anon_mib": r["rss_kib"]["RssAnon"] / 1024 if "RssAnon" in r["rss_kib"] else None,
        "rss_file_mib": r["rss_kib"]["RssFile"] / 1024 if "RssFile" in r["rss_kib"] else None,
    }


def measure(n: int, kind: str, deposit_rounds: int, drop: bool, skip: frozenset = frozenset(), width: int = 64) -> dict:
    path = corpus_store(n, kind=kind)
    files = {f: os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if not f.startswith(".")}
    row: dict = {"n": n, "kind": kind, "expansion_search": width, "load_before": os.getloadavg()[0]}
    row["sizes"] = {
        "index_bytes": files.get("index.usearch", 0),
        "lmdb_bytes": files.get("data.mdb", 0),
        "raw_f32_vector_bytes": n * DIM * 4,
    }
    row["sizes"]["bytes_per_record"] = sum(files.values()) / n
    print(f"{n:,} ({kind}): sizes {row['sizes']}", file=sys.stderr)
    row["cold"] = measure_cold(n, kind, path, drop)  # first: nothing of this run has touched the files yet
    print(f"  cold {row['cold']}", file=sys.stderr)
    row["recall"] = measure_recall(n, kind, path, width)
    row["open"] = measure_open(n, kind, path)
    print(f"  open {row['open']}", file=sys.stderr)
    if "deposit" not in skip:  # a copy of the store: minutes at 1M
        row["deposit"] = measure_deposit(n, path, deposit_rounds)
        print(f"  deposit {row['deposit']}", file=sys.stderr)
    if "verify" not in skip:
        row["verify"] = measure_verify(path)
        print(f"  verify {row['verify']}", file=sys.stderr)
    row["load_after"] = os.getloadavg()[0]
    return row


# -- the figure ---------------------------------------------------------------

ENGINE, LIMIT = "#0072B2", "#999999"


def panel(x0: float, y0: float, w: float, h: float, title: str, unit: str, xs, series) -> list[str]:
    """One log-log panel: series is [(label, colour, dashed, ys)]."""
    ys = [y for _, _, _, s in series for y in s if y and y > 0]
    if not ys:  # a measure left out (--skip) at every size: say so rather than draw an empty axis
        return [
            f'<text x="{x0 + w / 2}" y="{y0 + 12}" text-anchor="middle" font-size="12">{escape(title)}</text>',
            f'<text x="{x0 + w / 2}" y="{y0 + h / 2}" text-anchor="middle" font-size="10" fill="#777">not measured</text>',
        ]
    lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    hi = max(hi, lo + 1)
    xlo, xhi = math.log10(min(xs)), math.log10(max(xs))
    xhi = max(xhi, xlo + 1)

    def px(x: float) -> float:
        return x0 + 40 + (math.log10(x) - xlo) / (xhi - xlo) * (w - 50)

    def py(y: float) -> float:
        return y0 + h - 25 - (math.log10(y) - lo) / (hi - lo) * (h - 45)

    out = [f'<text x="{x0 + w / 2}" y="{y0 + 12}" text-anchor="middle" font-size="12">{escape(title)}</text>']
    for e in range(lo, hi + 1):
        y = py(10.0**e)
        out.append(f'<line x1="{x0 + 40}" y1="{y:.1f}" x2="{x0 + w - 10}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 + 36}" y="{y + 3:.1f}" text-anchor="end" font-size="9">{_si(10.0**e)}{unit}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{y0 + h - 12}" text-anchor="middle" font-size="9">{_si(x)}</text>')
    for _label, colour, dashed, s in series:
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, s) if y and y > 0)
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.6"{dash}/>')
        for x, y in zip(xs, s):
            if y and y > 0:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{colour}"/>')
    # each series named in the top left corner, one line each
    for j, (label, colour, _, _ys) in enumerate(series):
        out.append(f'<text x="{x0 + 44}" y="{y0 + 24 + 10 * j}" font-size="9" fill="{colour}">{escape(label)}</text>')
    return out


def _get(row: dict, measure: str, field: str):
    """A time in seconds, or None where the measure was skipped (no point drawn)."""
    return row[measure][field] / 1e3 if measure in row else None


def _si(v: float) -> str:
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def svg(rows: list[dict]) -> str:
    xs = [r["n"] for r in rows]
    shares = list(rows[0]["recall"])
    w, h, cols = 250, 170, 3
    panels = [
        (
            "recall p50, 100% owner",
            "s",
            [
                ("engine", ENGINE, False, [r["recall"]["100%"]["p50_ms"] / 1e3 for r in rows]),
                ("raw usearch", LIMIT, True, [r["recall"]["100%"]["raw_p50_ms"] / 1e3 for r in rows]),
            ],
        ),
        (
            "recall p50, 1% owner",
            "s",
            [
                ("engine", ENGINE, False, [r["recall"]["1%"]["p50_ms"] / 1e3 for r in rows]),
                ("raw usearch", LIMIT, True, [r["recall"]["1%"]["raw_p50_ms"] / 1e3 for r in rows]),
            ],
        ),
        (
            "deposit, 1 statement",
            "s",
            [
                ("engine", ENGINE, False, [_get(r, "deposit", "ms") for r in rows]),
                ("raw usearch", LIMIT, True, [_get(r, "deposit", "raw_ms") for r in rows]),
            ],
        ),
        (
            "open + first recall",
            "s",
            [
                ("engine", ENGINE, False, [r["open"]["ms"] / 1e3 for r in rows]),
                ("raw usearch", LIMIT, True, [r["open"]["raw_ms"] / 1e3 for r in rows]),
            ],
        ),
        (
            "verify",
            "s",
            [
                ("engine", ENGINE, False, [_get(r, "verify", "ms") for r in rows]),
                ("raw lmdb read", LIMIT, True, [_get(r, "verify", "raw_ms") for r in rows]),
            ],
        ),
        (
            "files",
            "B",
            [
                ("index", ENGINE, False, [r["sizes"]["index_bytes"] for r in rows]),
                ("LMDB", "#E69F00", False, [r["sizes"]["lmdb_bytes"] for r in rows]),
                ("f32 vectors", LIMIT, True, [r["sizes"]["raw_f32_vector_bytes"] for r in rows]),
            ],
        ),
    ]
    body = []
    for i, (title, unit, series) in enumerate(panels):
        body += panel((i % cols) * w, 34 + (i // cols) * h, w, h, title, unit, xs, series)
    legend_y = 34 + ((len(panels) + cols - 1) // cols) * h + 8
    body.append(f'<line x1="20" y1="{legend_y}" x2="40" y2="{legend_y}" stroke="{ENGINE}" stroke-width="1.6"/>')
    body.append(f'<text x="44" y="{legend_y + 3}" font-size="10">agentsensus (index file in the files panel)</text>')
    body.append(f'<line x1="270" y1="{legend_y}" x2="290" y2="{legend_y}" stroke="#E69F00" stroke-width="1.6"/>')
    body.append(f'<text x="294" y="{legend_y + 3}" font-size="10">LMDB data.mdb</text>')
    body.append(
        f'<line x1="400" y1="{legend_y}" x2="420" y2="{legend_y}" stroke="{LIMIT}" stroke-width="1.6" stroke-dasharray="4 3"/>'
    )
    body.append(f'<text x="424" y="{legend_y + 3}" font-size="10">raw limit</text>')
    kind = rows[0]["kind"]
    r5 = ", ".join(f"{s} {min(r['recall'][s]['recall_at_5'] for r in rows):.3f}" for s in shares)
    # Two lines: one would run past the figure's width.
    title = f"Cost against records ({kind} corpus, dim {DIM})"
    subtitle = f"lowest recall@5 per owner share: {r5}"
    W, H = cols * w, legend_y + 14
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        f'font-family="system-ui, sans-serif"><rect width="{W}" height="{H}" fill="white"/>'
        f'<text x="{W / 2}" y="13" text-anchor="middle" font-size="12">{escape(title)}</text>'
        f'<text x="{W / 2}" y="26" text-anchor="middle" font-size="10">{escape(subtitle)}</text>'
        + "".join(body)
        + "</svg>\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated record counts")
    ap.add_argument("--kind", default="clustered", help="corpus kind (datasets.KINDS)")
    ap.add_argument("--deposits", type=int, default=50, help="single-statement deposits timed per size")
    ap.add_argument("--json", help="where to write the numbers (default bench/results/scale-KIND.json)")
    ap.add_argument("--svg", help="where to draw them (default: beside the JSON)")
    ap.add_argument("--expansion-search", type=int, default=64, help="Store(expansion_search=...) for the recall runs")
    ap.add_argument("--skip", default="", help="comma-separated measures to leave out: deposit, verify")
    ap.add_argument("--replot", nargs="+", help="draw existing JSON files (their rows together) instead of measuring")
    ap.add_argument(
        "--cold",
        choices=["drop", "copy"],
        default="drop",
        help="cold start on a dropped page cache (root; the whole machine's) or on a fresh copy of the store",
    )
    a = ap.parse_args()
    if a.replot:
        rows = []
        for name in a.replot:
            with open(name) as f:
                rows += json.load(f)["rows"]
        report = {"rows": sorted(rows, key=lambda r: r["n"])}
    else:
        from datasets import KINDS

        if a.kind not in KINDS:
            sys.exit(f"--kind must be one of {', '.join(KINDS)}, got {a.kind!r}")
        try:
            sizes = [int(x) for x in a.sizes.split(",")]
        except ValueError:
            sys.exit(f"--sizes must be comma-separated integers, got {a.sizes!r}")
        if any(n < 1000 for n in sizes):
            sys.exit("--sizes: every size must be at least 1000 (the 0.1% owner needs a record)")
        t0 = time.perf_counter()
        rows = []
        for i, n in enumerate(sizes):
            rows.append(
                measure(
                    n,
                    a.kind,
                    a.deposits,
                    a.cold == "drop",
                    frozenset(filter(None, a.skip.split(","))),
                    a.expansion_search,
                )
            )
            progress("sizes measured", i + 1, len(sizes), t0)
        report = {"machine": {"cpus": os.cpu_count(), "cpu": platform.processor()}, "rows": rows}
    out = a.json or os.path.join(HERE, "results", f"scale-{report['rows'][0]['kind']}.json")
    if not a.replot:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(report, f, indent=1)
        print(out)
    dest = a.svg or os.path.splitext(out)[0] + ".svg"
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    with open(dest, "w") as f:
        f.write(svg(report["rows"]))
    print(dest)


if __name__ == "__main__":
    main()
