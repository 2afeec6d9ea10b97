"""Text digests are checked against the texts they stand for: an import
refuses a digest none of its record's texts explain (nothing is written),
and verify() reports a record whose stored digest is another text's (I19)."""

from __future__ import annotations

import io
import json
import os
import struct

import lmdb
import pytest
from agentsensus import Store
from agentsensus._store.normalize import text_digest
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, unit


def build(path: str) -> dict[str, int]:
    with Store(path, dim=DIM, judge=None) as s:
        ids = {
            t: s.deposit("alice", [t], unit(n)[None]).ids[0] for n, t in enumerate(["the ghost walks", "tea at noon"])
        }
    return ids


def lines_of(path: str) -> list[str]:
    out = io.StringIO()
    with Store(path, create=False) as s:
        export_jsonl(s, out)
    return out.getvalue().splitlines()


def test_an_import_with_another_texts_digest_is_refused_naming_the_line(tmp_path) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    build(src)
    lines = lines_of(src)
    n = next(i for i, line in enumerate(lines) if json.loads(line).get("text") == "tea at noon")
    row = json.loads(lines[n])
    row["digests"] = [text_digest("the password is swordfish").hex()]  # a text its record never held
    lines[n] = json.dumps(row)
    with pytest.raises(ValueError, match=rf"^line {n + 1}: record {row['id']} carries text digest") as e:
        import_jsonl(iter(lines), dst)
    assert "\n" not in str(e.value)
    assert not os.path.exists(dst)
    assert not [p for p in os.listdir(tmp_path) if p.startswith("dst")]


@pytest.mark.parametrize(
    "poison, message",
    [
        ("a text nobody deposited", r"^line {n}: .*digest of none of its texts"),
        ("the ghost walks", r"^lines? [0-9-]+: record \d+ has a text digest another record already has"),
    ],
)
def test_an_added_foreign_digest_is_refused_too(tmp_path, poison: str, message: str) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    build(src)
    lines = lines_of(src)
    n = next(i for i, line in enumerate(lines) if json.loads(line).get("text") == "tea at noon")
    row = json.loads(lines[n])
    row["digests"].append(text_digest(poison).hex())
    lines[n] = json.dumps(row)
    with pytest.raises(ValueError, match=message.format(n=n + 1)):
        import_jsonl(iter(lines), dst)
    assert not os.path.exists(dst)


def test_a_sound_export_still_imports_and_verifies(tmp_path) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    build(src)
    import_jsonl(iter(lines_of(src)), dst)
    with Store(dst, create=False) as s:
        assert s.verify() == []


def test_verify_reports_a_record_holding_another_texts_digest(store_path) -> None:
    ids = build(store_path)
    rid = ids["tea at noon"]
    own, foreign = text_digest("tea at noon"), text_digest("the ghost walks")
    # Point tea's digest entries at a digest of a text it never held, as a
    # poisoned import did before imports were checked.
    env = lmdb.open(store_path, max_dbs=64, subdir=True)
    norms = env.open_db(b"norms", create=False)
    rnorms = env.open_db(b"rnorms", create=False, dupsort=True, dupfixed=True)
    key = struct.pack(">Q", rid)
    poison = text_digest("a text nobody deposited")
    with env.begin(write=True) as txn:
        assert txn.delete(own, db=norms) and txn.delete(key, own, db=rnorms)
        txn.put(poison, key, db=norms)
        txn.put(key, poison, db=rnorms)
    env.close()
    with Store(store_path, create=False) as s:
        problems = s.verify()
    assert len(problems) == 1 and problems[0].startswith(f"record {rid} holds text digest {poison.hex()}")
    assert foreign != poison
