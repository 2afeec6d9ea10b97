"""The saved index file: mapped on open after a clean close, loaded on the
first change, checksummed so that a damaged one is rebuilt and never served.

exact_cutoff=0 sends every recall through the HNSW graph, so these tests read
the index itself rather than the exact scan small owners get."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from agentsensus import Store
from helpers import DIM, unit

pytestmark = pytest.mark.slow  # writer processes killed before their index save

N = 400


def results(s: Store, owners=("a0", "a1", "all")) -> list:
    return [[(m.id, m.via) for m in s.recall(o, unit(10_000 + q), k=5)] for o in owners for q in range(12)]


@pytest.fixture
def saved(tmp_path) -> tuple[str, list]:
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=DIM, exact_cutoff=0) as s:
        for i in range(0, N, 4):
            vs = np.stack([unit(j) for j in range(i, i + 4)])
            s.deposit_many(
                [
                    (f"a{i % 3}", [f"fact {j}" for j in range(i, i + 4)], vs),
                    ("all", [f"fact {j}" for j in range(i, i + 4)], vs),
                ]
            )
        want = results(s)
    return path, want


def test_a_reopened_store_serves_the_same_results_and_then_takes_writes(saved) -> None:
    path, want = saved
    with Store(path, exact_cutoff=0) as s:
        assert results(s) == want  # served from the mapped file
        s.deposit("a0", ["a brand new fact"], unit(10_000)[None])  # the first change loads it
        top = s.recall("a0", unit(10_000), k=1)[0]
        assert top.text == "a brand new fact"
        s.forget("a0", top.id)
        assert s.recall("a0", unit(10_000), k=1)[0].text != "a brand new fact"
        after = results(s)
    with Store(path, exact_cutoff=0, readonly=True) as s:
        assert s.verify() == []
        assert results(s) == after


def test_readers_in_other_processes_map_the_file_and_catch_up(saved) -> None:
    path, want = saved
    code = f"""
import sys, json
sys.path[:0] = {sys.path!r}
sys.path.insert(0, {os.path.dirname(__file__)!r})
from agentsensus import Store
from helpers import unit
from test_index_file import results
with Store({path!r}, readonly=True, exact_cutoff=0) as s:
    print(json.dumps(results(s, owners=("a0",))))
    sys.stdin.readline()  # the parent writes meanwhile
    print(json.dumps([m.text for m in s.recall("a0", unit(10_000), k=1)]))
"""
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    assert json.loads(child.stdout.readline()) == json.loads(json.dumps(want[:12]))
    with Store(path, exact_cutoff=0) as s:
        s.deposit("a0", ["news for the reader"], unit(10_000)[None])
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == '["news for the reader"]'
    assert child.wait(timeout=60) == 0


def probe(path: str) -> list:
    """Recalls (exact scans at this size), then deposits near every tenth
    record: the judge's candidates come from a search of the HNSW graph."""
    seen: list = []

    def judge(requests):
        seen.append([[c.id for c in r.candidates] for r in requests])
        return [None] * len(requests)

    # lexical_candidates=0: the judge sees the graph's candidates alone (the lexical ones come from LMDB).
    with Store(path, exact_cutoff=0, judge=judge, min_similarity=-1.0, lexical_candidates=0) as s:
        out = results(s)
        for i in range(0, N, 40):
            s.deposit("prober", [f"probe {i}"], unit(i)[None])
    return [out, seen]


def flip_and_open(path: str, offset: int) -> subprocess.CompletedProcess:
    index = os.path.join(path, "index.usearch")
    with open(index, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))
    code = f"""
import sys, json
sys.path[:0] = {sys.path!r}
sys.path.insert(0, {os.path.dirname(__file__)!r})
from agentsensus import Store
from test_index_file import probe
print(json.dumps(probe({path!r})))
"""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_a_damaged_index_file_is_rebuilt_never_served(saved, tmp_path) -> None:
    """A byte changed anywhere (header, vectors, graph links, levels): the
    checksum refuses the file, the index is rebuilt from LMDB, and results are
    what the sound store gave."""
    path, _ = saved
    size = os.path.getsize(os.path.join(path, "index.usearch"))
    sound = os.fspath(tmp_path / "sound")
    shutil.copytree(path, sound)
    want = probe(sound)
    assert all(len(c[0]) == 8 for c in want[1])  # the judge saw a full candidate list each time
    expected = json.loads(json.dumps(want))
    for k, offset in enumerate([9, 30, 60, 100, size // 7, size // 3, size // 2, 2 * size // 3, size - 200, size - 3]):
        copy = os.fspath(tmp_path / f"c{k}")
        shutil.copytree(path, copy)
        r = flip_and_open(copy, offset)
        assert r.returncode == 0, f"offset {offset}: the process died ({r.returncode}): {r.stderr[-400:]}"
        assert json.loads(r.stdout) == expected, f"offset {offset}"


def test_an_index_file_of_the_previous_format_is_rebuilt(saved) -> None:
    path, want = saved
    index = os.path.join(path, "index.usearch")
    with open(index, "r+b") as f:
        f.write(b"ASIDX001")
    with Store(path, exact_cutoff=0) as s:
        assert results(s) == want
    with open(index, "rb") as f:
        assert f.read(8) == b"ASIDX003"  # saved again in the current format on close
