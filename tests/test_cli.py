"""The command line on a real store: show, recall and export, as a program
reads them (--json and JSON Lines), and one run as a real process."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from agentsensus import Store, judges
from agentsensus.cli import main
from agentsensus.embedders import hash as embed


@pytest.fixture
def world(tmp_path) -> str:
    """A store written with the hash embedder: merges, edges, and lineage."""
    path = os.fspath(tmp_path / "world")
    with Store(path, embed=embed, judge=judges.threshold(0.8), min_similarity=0.8) as s:
        s.deposit("horatio", ["The ghost walks on the platform at midnight", "Horatio is afraid"], round=1)
        s.deposit("marcellus", ["the ghost walks on the platform at midnight tonight"], round=1)
        s.deposit("bernardo", ["The ghost walks on the platform at midnight!", "Bernardo keeps the watch"], round=2)
        s.fence.publish("weather", "marcellus", "cold")
        s.fence.publish("weather", "marcellus", b"\x00colder")
        s.fence.publish("watch", "bernardo", "midnight")
        s.fence.derive("plan", "horatio", "go to the platform", {"weather": 2, "watch": 1})
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_show_prints_a_record_with_owners_and_neighbours(world: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(world, readonly=True) as s:
        ghost = s.recall("bernardo", embed(["ghost platform midnight"])[0], k=1, expand=False)[0]
        expected = {n: s.get(n).text for n in s.neighbors(ghost.id)}
    code, out, _ = run(capsys, "show", world, str(ghost.id), "--json")
    assert code == 0
    row = json.loads(out)
    assert row["id"] == ghost.id and row["text"] == ghost.text and row["round"] == ghost.round
    assert row["owners"] == ["bernardo", "horatio", "marcellus"]
    assert {n["id"]: n["text"] for n in row["neighbors"]} == expected
    assert set(expected.values()) == {"Horatio is afraid", "Bernardo keeps the watch"}

    code, out, _ = run(capsys, "show", world, str(ghost.id))
    assert code == 0 and "owners (3): bernardo, horatio, marcellus" in out and "Horatio is afraid" in out


def test_show_of_an_absent_record_exits_1(world: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "show", world, "999999")
    assert code == 1 and "no record 999999" in err


def test_recall_text_query_matches_the_api(world: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "recall", world, "horatio", "what walks at midnight?", "--k", "1", "--json")
    assert code == 0
    rows = json.loads(out)
    with Store(world, readonly=True) as s:
        api = s.recall("horatio", embed(["what walks at midnight?"])[0], k=1)
    assert [(r["id"], r["via"], r["owners"]) for r in rows] == [(m.id, m.via, sorted(m.owners)) for m in api]
    assert rows[0]["via"] == "hit" and rows[0]["score"] == pytest.approx(api[0].score)
    assert [r["text"] for r in rows if r["via"] == "edge"] == ["Horatio is afraid"]

    code, out, _ = run(
        capsys, "recall", world, "horatio", "what walks at midnight?", "--k", "1", "--no-expand", "--json"
    )
    assert [r["via"] for r in json.loads(out)] == ["hit"]


def test_recall_vector_json_and_a_wrong_dimension(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = os.fspath(tmp_path / "small")
    with Store(path, dim=3) as s:
        [rid] = s.deposit("a", ["x"], [[1.0, 0.0, 0.0]]).ids
    code, out, _ = run(capsys, "recall", path, "a", "[1, 0.1, 0]", "--vector-json", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == [rid]
    with pytest.raises(SystemExit, match="3 dimensions and the hash embedder makes 384"):
        main(["recall", path, "a", "some text"])


def test_export_writes_every_record_edge_merge_and_lineage_version(
    world: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "export", world)
    assert code == 0 and "exported 3 records, 2 merges, 3 lineage keys" in err
    rows: list[dict[str, Any]] = [json.loads(line) for line in out.splitlines()]
    kinds = [r["type"] for r in rows]
    assert kinds == sorted(kinds, key=["store", "record", "merge", "key"].index)  # the documented order

    with Store(world, readonly=True) as s:
        head = rows[0]
        assert (head["dim"], head["metric"], head["stats"]["records"]) == (384, "cos", s.stats().records)
        records = {r["id"]: r for r in rows if r["type"] == "record"}
        assert sorted(records) == [m.id for m in s.records()]
        for m in s.records():
            r = records[m.id]
            assert (r["text"], r["owners"], r["round"], r["edges"]) == (
                m.text,
                sorted(m.owners),
                m.round,
                s.neighbors(m.id),
            )
        merges = [{k: v for k, v in r.items() if k not in ("type", "seq")} for r in rows if r["type"] == "merge"]
        assert merges == [vars(g) for g in s.merges()] and len(merges) == 2

        keys = {r["key"]: r for r in rows if r["type"] == "key"}
        assert sorted(keys) == s.fence.keys() == ["plan", "watch", "weather"]
        weather = keys["weather"]
        assert (weather["owner"], weather["head"]) == ("marcellus", 2)
        assert [base64.b64decode(v["value_b64"]) for v in weather["versions"]] == [b"cold", b"\x00colder"]
        plan = keys["plan"]
        assert {(f["key"], f["owner"], f["version"]) for f in plan["frontier"]} == {
            ("weather", "marcellus", 2),
            ("watch", "bernardo", 1),
        }
        assert {f["digest"] for f in plan["frontier"]} == {l.digest.hex() for l in s.fence.frontier("plan")}


def test_export_to_a_file_and_as_a_real_process(world: str, tmp_path) -> None:
    out = tmp_path / "world.jsonl"
    cmd = [
        sys.executable,
        "-c",
        "import sys; from agentsensus.cli import main; sys.exit(main())",
        "export",
        world,
        "-o",
        str(out),
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["type"] == "store" and len(lines) == 1 + 3 + 2 + 3


def _open_elsewhere(path: str) -> subprocess.Popen:
    """A process holding the store at path open until its stdin closes."""
    code = (
        f"import sys; from agentsensus import Store; s = Store({path!r}); print('open', flush=True); sys.stdin.read()"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "open"
    return p


@pytest.fixture
def bad_inputs(world: str, tmp_path) -> dict[str, Any]:
    notjson = tmp_path / "bad.jsonl"
    notjson.write_text("{not json\n")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    return {
        "world": world,
        "missing": str(tmp_path / "no-such-store"),
        "notjson": str(notjson),
        "binary": str(binary),
        "empty": str(empty_dir),
        "tmp": str(tmp_path),
    }


# (argv with {placeholders}, the exit code, a piece of the one-line error)
REFUSALS = [
    (["stats", "{missing}"], 1, "no store at"),
    (["check", "{missing}"], 1, "no store at"),
    (["check", "{empty}"], 1, "agentsensus check:"),
    (["compact", "{missing}"], 1, "no store at"),
    (["show", "{world}", "999"], 1, "no record 999"),
    (["show", "{missing}", "1"], 1, "no store at"),
    (["show", "{world}", "one"], 2, "invalid int value"),
    (["recall", "{world}", "horatio", "ghost", "--k", "0"], 1, "k must be at least 1"),
    (["recall", "{world}", "horatio", "[1, 2", "--vector-json"], 1, "not a JSON array"),
    (["recall", "{world}", "horatio", "[1, 2]", "--vector-json"], 1, "query must have shape"),
    (["recall", "{world}", "", "ghost"], 1, "owner must be a non-empty name"),
    (["export", "{missing}"], 1, "no store at"),
    (["export", "{world}", "-o", "{tmp}/no/such/dir/out.jsonl"], 1, "No such file or directory"),
    (["import", "{notjson}", "{tmp}/new"], 1, "line 1: not JSON"),
    (["import", "{binary}", "{tmp}/new"], 1, "agentsensus import:"),
    (["import", "{tmp}/absent.jsonl", "{tmp}/new"], 1, "No such file or directory"),
    (["import", "{notjson}", "{world}"], 1, "exists and is not empty"),
    (["frobnicate"], 2, "invalid choice"),
    (["simulate", "--no-such-option"], 2, "unrecognized arguments"),
    (["mcp", "{missing}", "--no-such-option"], 2, "unrecognized arguments"),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv, code, message", REFUSALS, ids=[" ".join(r[0]) for r in REFUSALS])
def test_every_refusal_is_one_line_from_a_real_process(bad_inputs, argv, code, message) -> None:
    args = [a.format(**bad_inputs) for a in argv]
    r = subprocess.run([sys.executable, "-m", "agentsensus.cli", *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    if code == 1:
        # Progress of an import may come first, on its own \r-line.
        assert len(lines) == 1 or (argv[0] == "import" and len(lines) == 2), r.stderr
        assert lines[-1].startswith(f"agentsensus {argv[0]}:") and message in lines[-1], r.stderr
    else:  # argparse: its usage line, then the error
        assert message in lines[-1] and "error:" in lines[-1], r.stderr
    assert not os.path.exists(os.path.join(bad_inputs["tmp"], "new"))


@pytest.mark.slow
def test_compact_of_a_store_open_elsewhere_is_one_line(world: str) -> None:
    holder = _open_elsewhere(world)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "agentsensus.cli", "compact", world], capture_output=True, text=True, timeout=120
        )
    finally:
        holder.communicate("", timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "is open in another process" in r.stderr
