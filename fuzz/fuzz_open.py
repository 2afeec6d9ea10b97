"""Fuzz target: opening damaged store files.

Each input describes damage to a copy of a sound store: truncating or
bit-flipping data.mdb or index.usearch, overwriting a range with the input's
bytes, deleting the index file, or putting another store's index file in its
place. The damaged store is then opened and read through every public read
(verify, records, get, recall, owned, stats, merges, fence). A clear error
(agentsensus.Error and its CorruptStoreError, ValueError, KeyError,
FileNotFoundError) or a successful open is fine; anything else, and any
crash of the process, is a finding. Every damaged file is opened and read,
also those whose pages `check_pages` (what `agentsensus check` runs first)
finds damaged: LMDB checks each page it reads (cmake/lmdb-validate-pages.patch),
so those reads must give CorruptStoreError, not a crash.

    pip install atheris==3.0.0
    PYTHONPATH=python python fuzz/fuzz_open.py -max_total_time=600 fuzz/corpus_open
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["agentsensus"]):
    import numpy as np
    from agentsensus import Error, Store
    from agentsensus._core import check_pages

DIM = 8
WORK = tempfile.mkdtemp(prefix="fuzz-open-")
SOUND = os.path.join(WORK, "sound")
OTHER = os.path.join(WORK, "other")
SCRATCH = os.path.join(WORK, "scratch")
EXPECTED = (Error, ValueError, KeyError, FileNotFoundError)


def _build(path: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with Store(path, dim=DIM) as s:
        for r in range(40):
            texts = [f"event {seed} {r} {i} " + "word " * int(rng.integers(1, 60)) for i in range(3)]
            s.deposit(f"agent{r % 4}", texts, rng.standard_normal((3, DIM)).astype(np.float32), round=r)
        s.deposit("agent9", [texts[0]], rng.standard_normal((1, DIM)).astype(np.float32))
        for rid in s.owned("agent1")[:5]:
            s.forget("agent1", rid)
        v = s.fence.publish("goal", "boss", "find the ghost")
        s.fence.derive("plan", "planner", "walk at night", {"goal": v})


_build(SOUND, 1)
_build(OTHER, 2)
FILES = ["data.mdb", "index.usearch"]


def damage(fdp: atheris.FuzzedDataProvider) -> None:
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        kind = fdp.ConsumeIntInRange(0, 5)
        path = os.path.join(SCRATCH, FILES[fdp.ConsumeIntInRange(0, 1)])
        if not os.path.exists(path):
            continue
        size = os.path.getsize(path)
        if kind == 0:  # truncate
            os.truncate(path, fdp.ConsumeIntInRange(0, size))
        elif kind in (1, 2):  # flip bits
            with open(path, "r+b") as f:
                for _ in range(fdp.ConsumeIntInRange(1, 8)):
                    at = fdp.ConsumeIntInRange(0, max(size - 1, 0))
                    f.seek(at)
                    b = f.read(1)
                    if b:
                        f.seek(at)
                        f.write(bytes([b[0] ^ (1 << fdp.ConsumeIntInRange(0, 7))]))
        elif kind == 3:  # overwrite a range with the input's bytes
            with open(path, "r+b") as f:
                f.seek(fdp.ConsumeIntInRange(0, size))
                f.write(fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 64)))
        elif kind == 4:
            os.remove(os.path.join(SCRATCH, "index.usearch")) if os.path.exists(
                os.path.join(SCRATCH, "index.usearch")
            ) else None
        else:  # another store's index
            shutil.copyfile(os.path.join(OTHER, "index.usearch"), os.path.join(SCRATCH, "index.usearch"))


def read_everything(s: Store) -> None:
    s.verify()
    ids = [m.id for m in s.records()]
    for rid in ids[:20]:
        s.get(rid)
        s.neighbors(rid)
    q = np.ones(DIM, np.float32)
    for owner in ("agent0", "agent1", "agent9", "nobody"):
        s.owned(owner)
        s.recall(owner, q, k=3)
    s.stats()
    list(s.merges())
    f = s.fence
    for key in f.keys():
        f.head(key)
        f.value(key)
        f.frontier(key)
        f.check(key)
    f.verify()


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    shutil.rmtree(SCRATCH, ignore_errors=True)
    shutil.copytree(SOUND, SCRATCH)
    damage(fdp)
    readonly = fdp.ConsumeBool()
    # repair cannot fix a damaged page (docs/reliability.md): try it only
    # on files whose pages are sound.
    pages_damaged = bool(check_pages(SCRATCH))
    try:
        with Store(SCRATCH, readonly=readonly) as s:
            read_everything(s)
            if not readonly and not pages_damaged and fdp.ConsumeBool():
                s.repair()
                # repair rebuilds the consensus store's derived tables; the
                # Planfence lineage is primary data it reports, not rewrites.
                left = [p for p in s.verify() if not p.startswith("lineage: ")]
                assert left == [], f"repair left problems: {left[:3]}"
    except EXPECTED:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
