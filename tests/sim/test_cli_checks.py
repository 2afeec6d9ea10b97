"""What ``agentsensus simulate`` and ``run`` refuse before any work: an --out they
could not write at the end, and a --world that is not a play.

Each refusal must come before the run: the run itself is replaced by one that
fails the test, so a check that only fires at the end (after the results were
computed) fails here too.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from agentsensus.sim import runner
from agentsensus.sim.runner import run
from agentsensus.sim.simulate_cli import cli_main


def _no_run(*_args: object, **_kwargs: object) -> dict[str, object]:
    raise AssertionError("the run started: the check came too late")


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], flag: str) -> str:
    """Run the CLI on ``argv``; it must exit 2 with one line on stderr naming ``flag``."""
    assert cli_main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert err.startswith(f"agentsensus simulate: {flag}: "), err
    assert "\n" not in err and "Traceback" not in err
    return err


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.fixture()
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's run and run's own work both fail the test if they start."""
    monkeypatch.setattr(runner, "run", _no_run)
    monkeypatch.setattr(runner, "load_play", _no_run)


def _unwritable_dir(tmp_path: Path) -> Path:
    """A directory that refuses new files to this process, whoever it runs as."""
    if sys.platform.startswith("linux") and Path("/proc/self").is_dir():
        return Path("/proc")  # procfs refuses new files even to root
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return locked


def test_out_that_is_a_file_fails_before_the_run(tmp_path, tiny_file, capsys, no_run) -> None:  # type: ignore[no-untyped-def]
    taken = tmp_path / "results.txt"
    taken.write_text("keep me\n", encoding="utf-8")
    before = _tree(tmp_path)
    base = ["--world", str(tiny_file), "--quick", "--quiet", "--rounds", "2"]
    err = _refused([*base, "--out", str(taken)], capsys, "--out")
    assert "is a file" in err
    # Under a file: mkdir would fail only at the end.
    err = _refused([*base, "--out", str(taken / "sub" / "report")], capsys, "--out")
    assert str(taken) in err
    assert _tree(tmp_path) == before  # nothing written, the file untouched


def test_out_in_a_directory_that_refuses_files_fails_before_the_run(tmp_path, tiny_file, capsys, no_run) -> None:  # type: ignore[no-untyped-def]
    locked = _unwritable_dir(tmp_path)
    target = locked / "agentsensus-report-test"
    err = _refused(["--world", str(tiny_file), "--quiet", "--out", str(target)], capsys, "--out")
    assert "not writable" in err and not target.exists()


def test_run_refuses_a_bad_out_before_any_work(tmp_path, tiny_file, no_run) -> None:  # type: ignore[no-untyped-def]
    taken = tmp_path / "results.txt"
    taken.write_text("keep me\n", encoding="utf-8")
    for out in (taken, taken / "sub", _unwritable_dir(tmp_path) / "agentsensus-report-test"):
        with pytest.raises(ValueError) as e:
            run(world=str(tiny_file), rounds=2, out=out, progress=False)
        assert "\n" not in str(e.value) and str(out) in str(e.value)
    assert taken.read_text(encoding="utf-8") == "keep me\n"


def test_out_that_holds_a_directory_where_a_report_goes(tmp_path, tiny_file, capsys, no_run) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "rep"
    (out / "metrics.json").mkdir(parents=True)
    err = _refused(["--world", str(tiny_file), "--quiet", "--out", str(out)], capsys, "--out")
    assert "metrics.json" in err


def test_a_fresh_out_under_a_writable_dir_passes_the_check(tmp_path, tiny_file) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "a" / "b"
    code = cli_main(
        ["--world", str(tiny_file), "--quick", "--quiet", "--rounds", "1", "--backends", "g_memory"]
        + ["--out", str(out)]
    )
    assert code == 0 and (out / "report.html").is_file() and (out / "metrics.json").is_file()


@pytest.mark.parametrize(
    ("name", "text", "why"),
    [
        ("runner.py", "def run():\n    return 0\n", "not a markdown file"),
        ("empty.md", "", "is empty"),
        ("blank.md", "\n  \n", "is empty"),
        ("notes.md", "# Notes\n\nSome prose, and no one speaks.\n", "not a play: 0 speeches"),
    ],
)
def test_world_that_is_not_a_play_is_refused(tmp_path, capsys, no_run, name, text, why) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "rep"
    err = _refused(["--world", str(path), "--quiet", "--out", str(out)], capsys, "--world")
    assert why in err and not out.exists()


def test_run_refuses_a_world_that_is_not_a_play(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for name, text in (("play.py", "print('hi')\n"), ("empty.md", "")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError) as e:
            run(world=str(path), rounds=1, backends=("g_memory",), out=tmp_path / "rep", progress=False)
        assert str(path) in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "rep").exists()


@pytest.mark.slow
def test_every_bundled_play_is_a_play() -> None:
    from agentsensus.sim.plays import list_plays, load_play

    for name in list_plays():
        play = load_play(name)
        assert play.cast and any(b.kind == "say" for b in play.beats), name
