"""Opening damaged store files gives a clear error or a rebuild, never a
crash. Regressions from fuzz/fuzz_open.py: a data.mdb shorter than its own
metadata used to kill the process with SIGBUS on open."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from agentsensus import CorruptStoreError, Error, Store, compact
from helpers import DIM, unit


@pytest.fixture
def sound(tmp_path) -> str:
    path = os.fspath(tmp_path / "sound")
    with Store(path, dim=DIM) as s:
        for i in range(60):
            s.deposit(f"a{i % 3}", [f"event {i} " + "word " * 40], unit(i)[None])
        s.fence.publish("goal", "boss", "v")
    return path


def open_in_child(path: str, readonly: bool = False) -> subprocess.CompletedProcess:
    """Opens and reads the store in a child, so that a crash fails the test
    instead of killing it."""
    code = f"""
import sys
sys.path[:0] = {sys.path!r}
from agentsensus import Store, Error
try:
    with Store({path!r}, readonly={readonly!r}) as s:
        s.verify(); list(s.records()); s.stats(); s.fence.keys()
    print("opened")
except Error as e:
    print(type(e).__name__, e)
"""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("keep", [2, 3, 0.5])
@pytest.mark.parametrize("readonly", [False, True])
def test_truncated_data_file_is_an_error_not_a_crash(sound, tmp_path, keep, readonly):
    path = os.fspath(tmp_path / "cut")
    shutil.copytree(sound, path)
    data = os.path.join(path, "data.mdb")
    size = os.path.getsize(data)
    os.truncate(data, int(size * keep) if isinstance(keep, float) else keep * 4096)
    r = open_in_child(path, readonly)
    assert r.returncode == 0, f"the process died ({r.returncode}): {r.stderr[-500:]}"
    assert r.stdout.startswith("CorruptStoreError"), r.stdout
    if readonly:
        assert "truncated" in r.stdout


def test_truncated_data_file_in_this_process(sound):
    os.truncate(os.path.join(sound, "data.mdb"), 3 * 4096)
    with pytest.raises(CorruptStoreError):
        with Store(sound) as s:
            s.verify()


def test_damaged_index_file_is_rebuilt(sound):
    index = os.path.join(sound, "index.usearch")
    with open(index, "r+b") as f:
        f.seek(os.path.getsize(index) // 2)
        f.write(b"\xff" * 64)
    with Store(sound) as s:
        assert s.verify() == []
        assert s.recall("a0", unit(3), k=1)[0].text.startswith("event 3 ")


def test_truncated_index_file_is_rebuilt(sound):
    os.truncate(os.path.join(sound, "index.usearch"), 100)
    with Store(sound) as s:
        assert s.verify() == []
        assert s.recall("a2", unit(5), k=1)[0].text.startswith("event 5 ")


def test_empty_data_file_without_dim_is_a_clear_error(sound):
    os.truncate(os.path.join(sound, "data.mdb"), 0)
    with pytest.raises(ValueError, match="dim is required"):
        Store(sound)


def _flip_node_offset(path: str, table_page_flags: int = 0x02) -> int:  # 0x02: P_LEAF
    """Flips the high bit of the first node offset of the last leaf page in
    data.mdb that check_pages walks (a live page): the fuzzer's first crash,
    a node offset 32 KiB past its page. Returns the page number."""
    from agentsensus import _core

    data = os.path.join(path, "data.mdb")
    with open(data, "rb") as f:
        raw = f.read()
    for pgno in range(len(raw) // 4096 - 1, 1, -1):
        page = raw[pgno * 4096 : (pgno + 1) * 4096]
        flags = int.from_bytes(page[10:12], "little")
        lower = int.from_bytes(page[12:14], "little")
        if int.from_bytes(page[0:8], "little") == pgno and flags == table_page_flags and lower > 20:
            at = pgno * 4096 + 17
            with open(data, "r+b") as f:
                f.seek(at)
                f.write(bytes([raw[at] ^ 0x80]))
            if _core.check_pages(path):  # a live page: keep the damage
                return pgno
            with open(data, "r+b") as f:
                f.seek(at)
                f.write(raw[at : at + 1])
    raise AssertionError("no live leaf page found")


@pytest.mark.slow
def test_damaged_node_offset_is_reported_not_a_crash(sound):
    """Regression (fuzz/fuzz_open.py): a flipped bit in a leaf page's node
    offset makes LMDB read past the end of the file (SIGBUS). The page walk
    finds it without LMDB's map; a plain open of such a file can still crash
    when the damaged page is one the open reads (docs/reliability.md)."""
    from agentsensus import _core

    pgno = _flip_node_offset(sound)
    problems = _core.check_pages(sound)
    assert any(f"page {pgno} node 0 starts outside the page" in p for p in problems), problems
    # `agentsensus check` walks the pages before it opens the store.
    cli = subprocess.run(
        [sys.executable, "-m", "agentsensus.cli", "check", sound],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert cli.returncode == 1 and "starts outside the page" in cli.stdout, cli.stdout + cli.stderr


def test_sound_files_have_sound_pages(sound):
    from agentsensus import _core

    assert _core.check_pages(sound) == [] and _core.check_pages(sound, False) == []


@pytest.mark.slow
def test_damaged_table_directory_is_refused_at_open(sound):
    """Every open reads the main tree (the table directory) through LMDB's
    map; its pages are walked first, so damage there is an error."""
    data = os.path.join(sound, "data.mdb")
    with open(data, "r+b") as f:
        metas = [f.read(4096)[16:], f.read(4096)[16:]]
        newest = max(metas, key=lambda m: int.from_bytes(m[128:136], "little"))
        root = int.from_bytes(newest[24 + 48 + 40 : 24 + 48 + 48], "little")
        f.seek(root * 4096 + 17)  # high byte of the first node offset
        b = f.read(1)
        f.seek(root * 4096 + 17)
        f.write(bytes([b[0] ^ 0x80]))
    r = open_in_child(sound)
    assert r.returncode == 0, f"the process died ({r.returncode}): {r.stderr[-500:]}"
    assert r.stdout.startswith("CorruptStoreError") and "main tree page" in r.stdout, r.stdout


@pytest.mark.parametrize("size", [0, 100])
def test_page_check_of_a_file_too_short_for_a_meta_page(sound, size):
    """Regression (fuzz/fuzz_open.py): check_pages divided by a page size of
    zero (SIGFPE) on a data.mdb shorter than one meta page."""
    from agentsensus import _core

    os.truncate(os.path.join(sound, "data.mdb"), size)
    assert _core.check_pages(sound) == ["data.mdb: the file is too short to hold a meta page"]


def test_page_check_names_a_damaged_table_printably(sound):
    """Regression (fuzz/fuzz_open.py): a table name damaged into invalid
    UTF-8 made check_pages' message undecodable (UnicodeDecodeError)."""
    from agentsensus import _core

    data = os.path.join(sound, "data.mdb")
    with open(data, "r+b") as f:
        raw = f.read()
        metas = [raw[16:4096], raw[4096 + 16 : 8192]]
        newest = max(metas, key=lambda m: int.from_bytes(m[128:136], "little"))
        root = int.from_bytes(newest[24 + 48 + 40 : 24 + 48 + 48], "little")
        at = raw.index(b"\x06\x00merges", root * 4096, (root + 1) * 4096) + 2  # key size, then the key
        f.seek(at)
        f.write(b"merg\xdf\x00")  # the name
        f.seek(at + 6 + 40)
        f.write((2**40 - 1).to_bytes(8, "little"))  # the table's root page
    problems = _core.check_pages(sound)
    assert len(problems) == 1, problems
    assert problems[0].startswith("data.mdb: table 'merg\\xdf\\x00' page 1099511627775 lies outside the file")


def test_repair_rewrites_a_table_whose_keys_are_out_of_order(sound):
    """Regression (fuzz/fuzz_open.py): a bit flip in a key of the vectors
    table leaves it out of order, so LMDB's lookups by key miss entries;
    repair used to drop sound records and leave stray vectors behind."""
    with Store(sound) as s:
        victim = s.owned("a0")[5]
    data = os.path.join(sound, "data.mdb")
    with open(data, "r+b") as f:
        raw = f.read()
        # a vectors node: data size DIM * 4, no flags, key size 8, the key
        node = (DIM * 4).to_bytes(4, "little") + b"\x00\x00\x08\x00" + victim.to_bytes(8, "big")
        at = raw.find(node)
        while at >= 0:  # free pages may hold stale copies: flip them all
            f.seek(at + 8 + 1)  # the key's second byte
            f.write(bytes([raw[at + 9] ^ 0x01]))
            at = raw.find(node, at + 1)
    with Store(sound) as s:
        assert s.verify() != []
        s.repair()
        assert s.verify() == []
        # the record whose vector key broke is dropped; every other survives
        assert s.stats().records == 59
        assert victim not in s.owned("a0")
        assert s.recall("a1", unit(7), k=1)[0].text.startswith("event 7 ")


def test_repair_survives_a_damaged_branch_key(sound):
    """Regression (fuzz/fuzz_open.py): a bit flip in a branch page's key
    misroutes LMDB's lookups while the leaves still scan in order; repair
    trusted the lookups and left records without their vectors."""
    data = os.path.join(sound, "data.mdb")
    with open(data, "r+b") as f:
        raw = bytearray(f.read())
    flipped = 0
    for pgno in range(2, len(raw) // 4096):
        page = raw[pgno * 4096 : (pgno + 1) * 4096]
        lower = int.from_bytes(page[12:14], "little")
        if int.from_bytes(page[0:8], "little") != pgno or int.from_bytes(page[10:12], "little") != 0x01:
            continue  # not a branch page
        child = int.from_bytes(page[int.from_bytes(page[16:18], "little") :][:4], "little")
        leaf = raw[child * 4096 : (child + 1) * 4096]
        first = int.from_bytes(leaf[16:18], "little")
        if int.from_bytes(leaf[first : first + 4], "little") != DIM * 4 or lower < 20:
            continue  # not the vectors table
        node = int.from_bytes(page[18:20], "little")  # the second node: it has a key
        raw[pgno * 4096 + node + 8 + 6] ^= 0x40  # a low byte of the big-endian id
        flipped += 1
    assert flipped
    with open(data, "wb") as f:
        f.write(raw)
    with Store(sound) as s:
        s.repair()
        assert s.verify() == []
        assert s.recall("a1", unit(7), k=1)[0].text.startswith("event 7 ")


# -- damage anywhere in the tables: LMDB refuses the page, nothing crashes ------

PSIZE = 4096  # LMDB 0.9 page layout: see cpp/src/lmdb/page_check.cpp


def _varied_store(path: str) -> None:
    """A store with every kind of table page: leaves, branches, overflow runs
    (long texts), sub-pages and a sub-tree of LEAF2 pages (an owner list too
    long for a sub-page). Compacted, so every page of the file is live."""
    rng = np.random.default_rng(5)
    with Store(path, dim=8, sync=False) as s:
        for r in range(25):
            s.deposit("hoarder", [f"hoard {r} {i}" for i in range(12)], rng.standard_normal((12, 8)), round=r)
            texts = [f"event {r} {i} " + "word " * (10 * i + r) for i in range(3)]
            if r % 5 == 0:
                texts.append(f"long {r} " + "x" * 6000)
            s.deposit(f"agent{r % 3}", texts, rng.standard_normal((len(texts), 8)), round=r)
        v = s.fence.publish("goal", "boss", "find the ghost")
        s.fence.derive("plan", "planner", "walk at night", {"goal": v})
    compact(path)


def _u(b: bytes, at: int, n: int) -> int:
    return int.from_bytes(b[at : at + n], "little")


def _damage_cases(raw: bytes) -> list[tuple[int, bytes]]:
    """Deterministic damage to every table page of a compacted data.mdb, as
    (offset, new bytes): one bit flipped in the page number, type, lower and
    upper bounds (or overflow run length); in the offset, size or child page,
    flags and key size of some nodes and of every overflow node (sizes by a
    high bit: a read past the file is what crashed); and 8 bytes of 0xff at
    seeded places."""
    rng = random.Random(11)
    out: list[tuple[int, bytes]] = []

    def flip(at: int, width: int, bit: int) -> None:
        out.append((at, (_u(raw, at, width) ^ (1 << bit)).to_bytes(width, "little")))

    for pgno in range(2, len(raw) // PSIZE):
        base = pgno * PSIZE
        page = raw[base : base + PSIZE]
        if _u(page, 0, 8) != pgno:
            continue  # the rest of an overflow run
        flags = _u(page, 10, 2)
        flip(base, 8, rng.randrange(20))
        flip(base + 10, 2, rng.randrange(7))
        flip(base + 12, 2, rng.randrange(16))
        flip(base + 14, 2, rng.randrange(9, 16))
        if flags in (1, 2):  # branch, leaf
            n = (_u(page, 12, 2) - 16) // 2
            offs = [_u(page, 16 + 2 * i, 2) for i in range(n)]
            big = {i for i in range(n) if flags == 2 and _u(page, offs[i] + 4, 2) & 1}  # F_BIGDATA
            for i in sorted({0, n - 1, rng.randrange(n)} | big):
                off = offs[i]
                flip(base + 16 + 2 * i, 2, 15)  # 32 KiB on
                flip(base + 16 + 2 * i, 2, rng.randrange(15))
                flip(base + off, 4, rng.randrange(16 if i in big else 12, 32))
                flip(base + off + 4, 2, rng.randrange(16))
                flip(base + off + 6, 2, rng.randrange(9, 16))
                if i in big:
                    flip(base + off + 8 + _u(page, off + 6, 2), 8, rng.randrange(8, 40))
        for lo in (16, 16, _u(page, 14, 2) if flags in (1, 2) else 16):
            out.append((base + rng.randrange(lo, PSIZE - 8), b"\xff" * 8))
    return out


def _read_damaged_copies(src: str) -> None:
    """Child process: each damaged copy of src, opened (read-only and
    writable in turn) and read through every public read; prints each case
    before it runs, so that a crash names it."""
    raw = open(os.path.join(src, "data.mdb"), "rb").read()
    scratch = src + ".damaged"
    shutil.copytree(src, scratch)
    outcomes: dict[str, int] = {}
    q = np.ones(8, np.float32)
    for n, (at, new) in enumerate(_damage_cases(raw)):
        shutil.copyfile(os.path.join(src, "index.usearch"), os.path.join(scratch, "index.usearch"))
        with open(os.path.join(scratch, "data.mdb"), "wb") as f:
            f.write(raw[:at] + new + raw[at + len(new) :])
        was = raw[at : at + len(new)].hex()
        print(f"case {n}: page {at // PSIZE}, byte {at % PSIZE}: {was} -> {new.hex()}", flush=True)
        try:
            with Store(scratch, readonly=n % 2 == 1, sync=False) as s:
                ids = [m.id for m in s.records()]
                for i in ids[::40]:
                    s.get(i)
                    s.neighbors(i)
                for owner in ("hoarder", "agent0", "agent1", "agent2", "nobody"):
                    s.owned(owner)
                    s.recall(owner, q, k=3)
                s.stats()
                list(s.merges())
                for key in s.fence.keys():
                    s.fence.head(key), s.fence.value(key), s.fence.frontier(key), s.fence.check(key)
                s.fence.verify()
                s.verify()
            outcome = "read"
        except (CorruptStoreError, Error, KeyError, ValueError) as e:
            outcome = type(e).__name__
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print("outcomes " + json.dumps(outcomes))


def _in_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path[:0] = {sys.path!r}\n{code}"],
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_compact_of_a_store_with_a_long_owner_list(tmp_path):
    """Regression: compact() crashed (SIGSEGV) once an owner list outgrew
    its sub-page into a sub-tree of LEAF2 pages: py-lmdb's LEAF2 check in
    mdb_page_get read the cursor's table record, which mdb_env_copy2's
    compacting walk does not set."""
    path = os.fspath(tmp_path / "varied")
    r = _in_child(f"import test_damaged_files as t; t._varied_store({path!r})")
    assert r.returncode == 0, f"the process died ({r.returncode}): {r.stderr[-500:]}"
    raw = open(os.path.join(path, "data.mdb"), "rb").read()
    assert any(_u(raw, p * PSIZE + 10, 2) == 0x22 for p in range(2, len(raw) // PSIZE))  # a LEAF2 page
    with Store(path, readonly=True) as s:
        assert s.verify() == [] and len(s.owned("hoarder")) == 300


@pytest.mark.slow
def test_damaged_table_pages_give_errors_not_crashes(tmp_path):
    """Damage to any table page (leaf, branch, overflow, LEAF2; header,
    node offsets, sizes, flags, child and overflow page numbers) used to be
    able to crash a plain open and read with SIGBUS or SIGSEGV. LMDB now
    checks every page it reads from its map (cmake/lmdb-validate-pages.patch):
    each read succeeds or raises a documented error. Runs in a child process,
    so a crash fails the test and names the damage."""
    src = os.fspath(tmp_path / "varied")
    code = f"import test_damaged_files as t; t._varied_store({src!r}); t._read_damaged_copies({src!r})"
    r = _in_child(code)
    cases = [line for line in r.stdout.splitlines() if line.startswith("case ")]
    assert r.returncode == 0, f"the process died ({r.returncode}) at {cases[-1:]}: {r.stderr[-1000:]}"
    outcomes = json.loads(r.stdout.splitlines()[-1].removeprefix("outcomes "))
    assert sum(outcomes.values()) == len(cases) > 1000
    # The damage was read: much of it refused as corrupt, the rest harmless
    # to these reads (free space, a key's bytes) or caught as bad data.
    quarter = len(cases) // 4
    assert outcomes["CorruptStoreError"] > quarter and outcomes["read"] > quarter, outcomes


def test_a_text_damaged_into_invalid_utf8_is_a_corrupt_store_error(sound):
    """Texts are valid UTF-8 when written: one that is not was damaged on
    disk, which is CorruptStoreError (not UnicodeDecodeError) on every read."""
    data = os.path.join(sound, "data.mdb")
    raw = bytearray(open(data, "rb").read())
    at = raw.find(b"event 3 word")
    assert at > 0 and raw.find(b"event 3 word", at + 1) < 0
    raw[at + 1] = 0xFF  # "e\xffent 3 ...": no longer UTF-8, same length
    with open(data, "wb") as f:
        f.write(raw)
    with Store(sound, readonly=True) as s:
        damaged = next(i for i in s.owned("a0") if i == 4)  # the 4th deposit: record 4, owner a0
        with pytest.raises(CorruptStoreError, match="not valid UTF-8"):
            s.get(damaged)
        with pytest.raises(CorruptStoreError, match="not valid UTF-8"):
            list(s.records())
        assert s.get(1).text.startswith("event 0 ")  # the rest reads
