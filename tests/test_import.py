"""export -> import round-trips a store exactly (records, ids, owners, vectors,
edges, text digests, merge log, counters, lineage), and a bad export leaves
nothing behind."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from agentsensus import Store, judges
from agentsensus.embedders import hash as embed
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, unit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def build_world(path: str) -> None:
    """Merges, edges, a forgotten record (an id gap), an owner left with
    nothing, observed and derived lineage with older versions as inputs."""
    with Store(path, embed=embed, judge=judges.threshold(0.8), min_similarity=0.8) as s:
        s.deposit("horatio", ["The ghost walks on the platform at midnight", "Horatio is afraid"], round=1)
        s.deposit("marcellus", ["the ghost walks on the platform at midnight tonight"], round=1)
        s.deposit("bernardo", ["The ghost walks on the platform at midnight!", "Bernardo keeps the watch"], round=2)
        gone = s.deposit("ghost", ["I am thy father's spirit", "Doomed for a certain term to walk the night"], round=3)
        s.forget("ghost", gone.ids[0])
        s.forget("ghost", gone.ids[1])
        s.deposit("francisco", ["For this relief much thanks: 'tis bitter cold", "I am sick at heart"], round=4)
        s.fence.publish("weather", "marcellus", "cold")
        s.fence.publish("weather", "marcellus", b"\x00colder")
        s.fence.publish("watch", "bernardo", "midnight")
        s.fence.observe("king", "claudius", 3, "dead")
        s.fence.derive("plan", "horatio", "go to the platform", {"weather": 1, "watch": 1, "king": 3})
        s.fence.derive("plan", "horatio", "go later", {"weather": 2, "watch": 1})
        s.fence.derive("report", "horatio", "tell Hamlet", {"plan": 1})


def exported(path: str) -> str:
    with Store(path, create=False, readonly=True) as s:
        out = io.StringIO()
        export_jsonl(s, out)
    return out.getvalue()


def test_export_import_export_is_identical_and_the_copy_behaves_the_same(tmp_path) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    build_world(src)
    text = exported(src)
    done = import_jsonl(io.StringIO(text), dst)
    assert (done.records, done.merges, done.keys, done.versions) == (5, 2, 5, 7)
    assert exported(dst) == text

    with Store(src, create=False, embed=embed) as a, Store(dst, create=False, embed=embed) as b:
        assert b.verify() == []
        for owner in ("horatio", "bernardo", "francisco", "ghost", "nobody"):
            for q in ("a ghost at midnight", "cold and sick", "the watch"):
                assert a.recall(owner, q, k=3) == b.recall(owner, q, k=3)
        for key in ("report", "plan"):
            assert a.fence.check(key) == b.fence.check(key)
        assert a.fence.check("plan").current and not a.fence.check("report").current
        # Numbering goes on where the source's would: the next record id and merge.
        da = a.deposit("bernardo", ["A new line", "the ghost walks on the platform at midnight tonight!"], round=9)
        db = b.deposit("bernardo", ["A new line", "the ghost walks on the platform at midnight tonight!"], round=9)
        assert da == db
        assert list(a.merges()) == list(b.merges())
        assert a.stats() == b.stats()
        assert a.fence.publish("weather", "marcellus", "warm") == b.fence.publish("weather", "marcellus", "warm") == 3
        assert a.fence.check("plan") == b.fence.check("plan") and not b.fence.check("plan").current


def test_vectors_survive_bit_for_bit(tmp_path) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    vecs = np.stack([unit(i) for i in range(20)])
    with Store(src, dim=DIM, metric="ip") as s:
        for i in range(0, 20, 4):
            s.deposit(f"agent{i % 3}", [f"statement {j}" for j in range(i, i + 4)], vectors=vecs[i : i + 4])
    import_jsonl(io.StringIO(exported(src)), dst)
    rows = [json.loads(line) for line in exported(dst).splitlines()]
    got = np.stack([np.frombuffer(base64.b64decode(r["vector"]), "<f4") for r in rows if r["type"] == "record"])
    assert got.tobytes() == vecs.astype("<f4").tobytes()


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]), st.lists(st.integers(0, 11), min_size=1, max_size=4), st.booleans()
        ),
        min_size=1,
        max_size=12,
    )
)
def test_round_trip_of_random_stores(tmp_path_factory, ops: list[tuple[str, list[int], bool]]) -> None:
    base = tmp_path_factory.mktemp("rt")
    src, dst = os.fspath(base / "src"), os.fspath(base / "dst")
    # Statement i always has the same vector and text: repeats merge exactly.
    with Store(src, dim=DIM, judge=judges.never) as s:
        for owner, picks, forget_first in ops:
            d = s.deposit(owner, [f"fact {i}" for i in picks], vectors=np.stack([unit(100 + i) for i in picks]))
            if forget_first:
                s.forget(owner, d.ids[0])
    text = exported(src)
    import_jsonl(io.StringIO(text), dst)
    assert exported(dst) == text


def lines_of(path: str) -> list[str]:
    return exported(path).splitlines(keepends=True)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda ls: ls[:2] + ["{not json\n"] + ls[2:], "line 3: not JSON"),
        (lambda ls: [ls[0].replace('"format": 5', '"format": 1')] + ls[1:], "format 1 has no vectors"),
        (lambda ls: ls[:3] + [ls[4], ls[3]] + ls[5:], "line 5: record 3 comes after record 6: ids must ascend"),
        (lambda ls: [l.replace('"edges": [2, 3]', '"edges": [3]') for l in ls], "does not list it back"),
        (lambda ls: [l.replace('"vector": "', '"vector": "AAAA') for l in ls], "'vector' holds"),
        (
            lambda ls: [l.replace('"owners": ["bernardo", "horatio", "marcellus"]', '"owners": []') for l in ls],
            "1 to 4096 owners",
        ),
        (
            lambda ls: [l.replace('"value_b64": "Y29sZA=="', '"value_b64": "d2FybQ=="') for l in ls],
            "digest does not match",
        ),
        (
            lambda ls: [l for l in ls if not l.startswith('{"type": "key", "key": "watch"')],
            "which the export does not hold",
        ),
        (lambda ls: [l.replace('"merges": 2', '"merges": 3') for l in ls], "stats"),
        (
            lambda ls: (
                ls[:1] + [l for l in ls[1:] if '"type": "merge"' in l] + [l for l in ls[1:] if '"type": "record"' in l]
            ),
            "a record line after the merge lines",
        ),
    ],
)
def test_a_bad_export_is_refused_naming_the_problem_and_leaves_nothing(tmp_path, damage: Any, message: str) -> None:
    src = os.fspath(tmp_path / "src")
    build_world(src)
    bad = damage(lines_of(src))
    assert bad != lines_of(src)
    dst = tmp_path / "dst"
    with pytest.raises(ValueError, match=message):
        import_jsonl(iter(bad), dst)
    assert sorted(os.listdir(tmp_path)) == ["src"]  # no store, no temporary directory


def test_import_refuses_a_target_that_holds_something(tmp_path) -> None:
    src = os.fspath(tmp_path / "src")
    build_world(src)
    with pytest.raises(FileExistsError):
        import_jsonl(iter(lines_of(src)), src)
    empty = tmp_path / "empty"
    empty.mkdir()
    import_jsonl(iter(lines_of(src)), empty)  # an empty directory is taken
    assert exported(os.fspath(empty)) == exported(src)


@pytest.mark.slow
def test_cli_export_then_import_as_real_processes(tmp_path) -> None:
    src, dst = os.fspath(tmp_path / "src"), os.fspath(tmp_path / "dst")
    build_world(src)
    dump = tmp_path / "world.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cli = [sys.executable, "-c", "import sys; from agentsensus.cli import main; sys.exit(main())"]
    done = subprocess.run(cli + ["export", src, "-o", str(dump)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(cli + ["import", str(dump), dst], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "imported 5 records, 2 merges, 5 lineage keys (7 versions)" in done.stderr
    assert exported(dst) == dump.read_text(encoding="utf-8")

    again = subprocess.run(cli + ["import", str(dump), dst], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 1 and "exists and is not empty" in again.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text(dump.read_text(encoding="utf-8") + "{\n", encoding="utf-8")
    bad = subprocess.run(
        cli + ["import", str(broken), str(tmp_path / "d2")], capture_output=True, text=True, env=env, timeout=120
    )
    assert bad.returncode == 1 and "not JSON" in bad.stderr and not (tmp_path / "d2").exists()
