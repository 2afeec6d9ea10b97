"""Four writer processes on one store at once, as bench/concurrency.py runs
them: every statement a writer's deposit acknowledged is in the store
afterwards, under the id it was given, owned by that writer, and the
records are exactly the distinct statements (shared ones merged once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from agentsensus import Store

HERE = os.path.dirname(__file__)
WRITERS = 4
DEPOSITS = 30
DIM = 32

# Each writer deposits its own statements and, every third deposit, one that
# every writer deposits too (the same text: an exact duplicate merges), so
# the processes race on commits that conflict as well as on ones that don't.
CODE = """
import json, sys
import numpy as np
from agentsensus import Store, judges
path, name, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = np.random.default_rng(seed)
acked = []
with Store(path, judge=judges.never) as s:
    for d in range({deposits}):
        texts = [f"{{name}}x{{d}}x{{j}}" for j in range(1 + d % 3)]
        if d % 3 == 0:
            texts.append(f"sharedx{{d}}")
        vecs = rng.standard_normal((len(texts), {dim})).astype(np.float32)
        if d % 3 == 0:
            vecs[-1] = np.random.default_rng(10_000 + d).standard_normal({dim})
        if d % 2:
            got = s.deposit(name, texts, vecs)
        else:
            got = s.deposit_many([(name, texts, vecs)])[0]
        acked.extend(zip(texts, got.ids))
print(json.dumps(acked))
"""


@pytest.mark.slow
def test_four_writer_processes_lose_no_acknowledged_statement(store_path):
    Store(store_path, dim=DIM).close()
    prelude = f"import sys\nsys.path[:0] = {sys.path!r}\n"
    code = prelude + CODE.format(deposits=DEPOSITS, dim=DIM)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, store_path, f"w{i}", str(i)], cwd=HERE, stdout=subprocess.PIPE, text=True
        )
        for i in range(WRITERS)
    ]
    acked: dict[str, list[tuple[str, int]]] = {}
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, f"writer w{i} exited {p.returncode}"
        acked[f"w{i}"] = [(t, rid) for t, rid in json.loads(out)]
    with Store(store_path, readonly=True) as s:
        texts: dict[str, int] = {}
        for owner, rows in acked.items():
            for text, rid in rows:
                m = s.get(rid)
                assert m.text == text and owner in m.owners, (owner, text, rid, m)
                assert texts.setdefault(text, rid) == rid  # a shared statement is one record for everyone
        assert s.stats().records == len(texts)
        shared = [t for t in texts if t.startswith("shared")]
        for t in shared:
            assert s.get(texts[t]).owners == frozenset(acked)
        assert s.verify() == []
