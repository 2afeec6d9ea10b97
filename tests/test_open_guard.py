"""One open per store per process, keyed on the store directory's identity
(cpp/src/lmdb/open_registry.hpp), not on its path: a second open, a compaction of an
open store, a direct engine open and use after fork() are refused with an
Error, under any path that reaches the directory."""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
from typing import Any, Iterator

import agentsensus
import pytest
from agentsensus import Store, _core, compact
from agentsensus.cli import main as cli_main
from agentsensus.io.export import export_jsonl
from agentsensus.io.importer import import_jsonl
from helpers import DIM, unit


def _deposit_and_read_back(s: Store, n: int, tag: str) -> None:
    for i in range(n):
        s.deposit(f"agent{i % 3}", [f"{tag} fact {i}"], unit(1000 + i)[None])
    assert {m.text for m in s.records()} >= {f"{tag} fact {i}" for i in range(n)}


@pytest.fixture(params=["symlink", "bind mount"])
def second_path(request, tmp_path) -> Iterator[tuple[str, str]]:
    """(path, another path to the same directory)."""
    store = os.fspath(tmp_path / "store")
    os.mkdir(store)
    other = os.fspath(tmp_path / "other")
    if request.param == "symlink":
        os.symlink(store, other)
        yield store, other
        return
    os.mkdir(other)
    r = subprocess.run(["mount", "--bind", store, other], capture_output=True, text=True)
    if r.returncode != 0:
        # A bind mount needs root (CAP_SYS_ADMIN); CI runs as root, so it runs
        # there. The symlink variant tests the same guard without privileges.
        why = (r.stderr or r.stdout).strip() or f"exit {r.returncode}"
        pytest.skip(
            f"mount --bind needs root (CAP_SYS_ADMIN) and was refused here ({why}); "
            "the symlink variant checks the same guard without it"
        )
    try:
        yield store, other
    finally:
        subprocess.run(["umount", other], check=True)


def test_a_second_path_to_an_open_store_is_refused_and_the_first_open_is_unharmed(second_path):
    store, other = second_path
    with Store(store, dim=DIM) as s:
        with pytest.raises(agentsensus.Error, match="already open in this process") as e:
            Store(other, dim=DIM)
        assert f"{other} (held as {store})" in str(e.value)  # both the path asked for and the holder
        with pytest.raises(agentsensus.Error, match="already open"):
            Store(other, create=False, readonly=True)
        # The refusal came before LMDB touched the lock file: the first open
        # still writes, and everything reads back after reopening.
        _deposit_and_read_back(s, 20, "first")
    with Store(other) as s:
        assert s.stats().records == 20 and s.verify() == []


def test_compact_of_an_open_store_is_refused_under_any_path_and_loses_nothing(second_path):
    store, other = second_path
    with Store(store, dim=DIM) as s:
        _deposit_and_read_back(s, 5, "before")
        for p in (store, other):
            with pytest.raises(agentsensus.Error, match="open in this process: close it before compacting"):
                compact(p)
        _deposit_and_read_back(s, 20, "after")  # the deposits the unguarded compaction lost
    with Store(store) as s:
        assert s.stats().records == 25 and s.verify() == []
    compact(other)  # closed: allowed
    with Store(other) as s:
        assert s.stats().records == 25 and s.verify() == []


def test_double_open_on_one_path_is_refused_and_reopen_after_close_works(store_path):
    s = Store(store_path, dim=DIM)
    with pytest.raises(agentsensus.Error, match="already open in this process"):
        Store(store_path, dim=DIM)
    with pytest.raises(agentsensus.Error, match="already open"):
        Store(os.path.join(store_path, ".", ""), dim=DIM)  # a path spelled otherwise
    s.deposit("alice", ["kept across reopen"], unit(1)[None])
    s.close()
    for _ in range(3):
        with Store(store_path) as s:
            assert [m.text for m in s.records()] == ["kept across reopen"]


def test_a_direct_engine_open_goes_through_the_same_guard(store_path):
    with Store(store_path, dim=DIM):
        with pytest.raises(agentsensus.Error, match="already open in this process"):
            _core.Engine(store_path, DIM, _core.Metric.cos, True, True, False, True, 4096, 1 << 24)
        with pytest.raises(agentsensus.Error, match="close it before compacting"):
            _core.compact(store_path)
    e = _core.Engine(store_path, DIM, _core.Metric.cos, True, True, False, True, 4096, 1 << 24)
    with pytest.raises(agentsensus.Error, match="already open in this process"):
        Store(store_path)
    e.close()
    with Store(store_path) as s:
        assert s.verify() == []


def test_the_cli_reports_a_compaction_refused_in_process(store_path, capsys):
    with Store(store_path, dim=DIM):
        try:
            rc = cli_main(["compact", store_path])
        except agentsensus.Error as e:
            message = str(e)
        else:
            assert rc != 0
            message = capsys.readouterr().err
    assert "close it before compacting" in message
    assert cli_main(["compact", store_path]) == 0
    assert capsys.readouterr().out.startswith("data.mdb: ")


def test_import_builds_through_the_guard_and_its_result_opens(store_path, tmp_path):
    # import opens the store it builds through Store (and so the engine's
    # guard); the built store opens once, and refuses a second open.
    with Store(store_path, dim=DIM) as s:
        _deposit_and_read_back(s, 3, "exported")
        buf = io.StringIO()
        export_jsonl(s, buf)
    target = os.fspath(tmp_path / "copy")
    import_jsonl(buf.getvalue().splitlines(), target)
    with Store(target) as s:
        assert s.stats().records == 3
        with pytest.raises(agentsensus.Error, match="already open"):
            Store(target)


# -- fork ----------------------------------------------------------------------

_inherited: dict[str, Any] = {}


def _child_uses_inherited_store(path: str, q: Any) -> None:
    s = _inherited["store"]
    out = []
    for call in (s.stats, lambda: s.recall("alice", unit(1), k=1), lambda: s.fence.keys()):
        try:
            call()
            out.append("ran")
        except agentsensus.Error as e:
            out.append(str(e))
    s.close()  # abandons without writing: the parent still has the store open
    with Store(path) as again:  # the child may open the store itself
        out.append(str(again.stats().records))
    q.put(out)


def test_a_store_used_in_a_forked_child_raises_and_the_child_may_reopen(store_path):
    s = Store(store_path, dim=DIM)
    s.deposit("alice", ["from the parent"], unit(1)[None])
    s.fence.publish("k", "alice", "v")
    _inherited["store"] = s
    try:
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_child_uses_inherited_store, args=(store_path, q))
        p.start()
        out = q.get(timeout=60)
        p.join(60)
        assert p.exitcode == 0
        assert out[-1] == "1"
        for msg in out[:-1]:
            assert "forked child" in msg and "LMDB forbids" in msg and store_path in msg, msg
        # The parent's store is untouched by the child.
        s.deposit("bob", ["after the fork"], unit(2)[None])
        assert s.verify() == [] and s.fence.head("k") == 1
    finally:
        _inherited.clear()
        s.close()
    with Store(store_path) as s:
        assert s.stats().records == 2 and s.verify() == []


def test_os_fork_child_is_refused_and_exits_cleanly(store_path):
    with Store(store_path, dim=DIM) as s:
        s.deposit("alice", ["one"], unit(1)[None])
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report through the pipe, never return into pytest
            code = 1
            try:
                try:
                    s.get(1)
                except agentsensus.Error as e:
                    code = 0 if "forked child" in str(e) else 2
                os.write(w, str(code).encode())
            finally:
                os._exit(code)
        os.close(w)
        with os.fdopen(r) as f:
            reply = f.read()
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, reply)
        assert s.get(1).text == "one"
