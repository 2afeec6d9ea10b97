"""What the said table (each statement with its owner and vector, which
forget needs) costs on disk, in a merge-heavy store: OWNERS owners each
witness the same EVENTS events in their own words, so every record absorbs
OWNERS - 1 merged statements. Prints each table's pages in MB and its share
of data.mdb.

    python bench/said_table_size.py [--owners 10] [--events 1000] [--dim 384]

Runs against the installed package; reads the tables with the lmdb package
(the bench extra).
"""

from __future__ import annotations

import argparse
import os
import tempfile

import lmdb
import numpy as np
from agentsensus import Store

TABLES = ["records", "vectors", "said", "merges", "norms", "owners", "journal"]


def first(requests):  # type: ignore[no-untyped-def]
    """Merges every statement into its nearest candidate."""
    return [r.candidates[0].id if r.candidates else None for r in requests]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--owners", type=int, default=10)
    p.add_argument("--events", type=int, default=1000)
    p.add_argument("--dim", type=int, default=384)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    base = rng.standard_normal((a.events, a.dim)).astype(np.float32)
    with tempfile.TemporaryDirectory(prefix="said-size-") as d:
        path = os.path.join(d, "s")
        # lexical_candidates=0: the judge merges into the first candidate, which must be the nearest vector
        with Store(path, dim=a.dim, sync=False, min_similarity=0.9, lexical_candidates=0) as s:
            for o in range(a.owners):
                items = [
                    (
                        f"owner{o}",
                        [f"owner {o} saw event {e} happen near the old mill at dusk"],
                        base[e] + 0.05 * rng.standard_normal(a.dim).astype(np.float32),
                    )
                    for e in range(a.events)
                ]
                s.deposit_many(items, judge=first)
                print(f"owner {o + 1}/{a.owners} deposited", flush=True)
            st = s.stats()
        env = lmdb.open(path, readonly=True, max_dbs=64, lock=False)
        size: dict[str, int] = {}
        with env.begin() as t:
            for name in TABLES:
                info = t.stat(env.open_db(name.encode(), txn=t, create=False))
                size[name] = (info["branch_pages"] + info["leaf_pages"] + info["overflow_pages"]) * info["psize"]
        env.close()
        total = os.path.getsize(os.path.join(path, "data.mdb"))
    print(f"{st.records} records, {st.merges} merge-log entries, dim {a.dim}")
    for name in TABLES:
        print(f"{name:>8}  {size[name] / 1e6:7.1f} MB  {100 * size[name] / total:5.1f}% of data.mdb")
    print(f"data.mdb  {total / 1e6:7.1f} MB")


if __name__ == "__main__":
    main()
