"""Large benchmark stores (up to 1M records) of the side-by-side corpus,
built once into bench/.data/ (outside git) with a progress bar;
``python bench/scale_stores.py N`` builds one and prints its path.

A million judge-free deposits would take most of an hour here, so these are
written through the import path (``Engine.load``, what ``agentsensus import``
uses): the same tables, journal and index as deposits of the same corpus
would leave (record ids, owner sets, affiliation edges per block of BLOCK,
text digests), then closed cleanly so the index file is saved.
"""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
from agentsensus import Store
from agentsensus._store.normalize import text_digest
from datasets import BLOCK, CORPUS_CHUNK, DATA, DIM, corpus_chunk, corpus_owners, corpus_tag, corpus_text, progress

CHUNK = CORPUS_CHUNK  # records per write transaction (a multiple of BLOCK: no deposit straddles two)


def corpus_store(n: int, *, seed: int = 0, kind: str = "clustered") -> str:
    """The path of a closed store holding the n-record corpus of that kind
    (``datasets.corpus(n, seed, kind=kind)``, made chunk by chunk), building
    it on first use."""
    path = os.path.join(DATA, f"corpus-store-{n}-{seed}-{corpus_tag(kind)}")
    if os.path.exists(os.path.join(path, "ready")):
        # A writable open brings what the store derives up to this build's
        # rules (a lexical index of older word rules is rebuilt, with
        # progress), so that a cache from an older build verifies clean.
        with Store(path, create=False):
            pass
        return path
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(DATA, exist_ok=True)
    t0 = time.perf_counter()
    with Store(path, dim=DIM, sync=False, map_size=int(n * DIM * 4 * 1.6) + (64 << 20)) as s:
        engine = s._handles().engine
        for start in range(0, n, CHUNK):
            stop = min(start + CHUNK, n)
            vs = corpus_chunk(start, stop, seed, DIM, kind)
            rows = []
            for b in range(start, stop, BLOCK):
                block = range(b, min(b + BLOCK, n))
                for i in block:
                    edges = [j + 1 for j in block if j != i]  # record id = corpus index + 1
                    text = corpus_text(i)
                    rows.append((i + 1, text, corpus_owners(i), 0, i // BLOCK + 1, edges, [text_digest(text)]))
            engine.load([], rows, vs, [], None)
            progress(f"building the {n:,}-record {kind} corpus store", stop, n, t0)
        deposits = (n + BLOCK - 1) // BLOCK
        engine.load([], [], np.zeros((0, DIM), np.float32), [], (n + 1, 1, deposits))
    open(os.path.join(path, "ready"), "w").close()
    return path


if __name__ == "__main__":
    # python bench/scale_stores.py N [KIND]: builds (or finds) the N-record store and prints its path.
    import sys

    from datasets import KINDS

    args = sys.argv[1:]
    if (
        not 1 <= len(args) <= 2
        or not args[0].isdigit()
        or int(args[0]) < 1
        or (len(args) == 2 and args[1] not in KINDS)
    ):
        sys.exit(f"usage: python bench/scale_stores.py N [KIND]   (N records, N >= 1; KIND one of {', '.join(KINDS)})")
    print(corpus_store(int(args[0]), kind=args[1] if len(args) == 2 else "clustered"))
