"""The Fence API on a real store: versions, owners, early cutoff, check and
guard (the frontier walk has its own tests in test_frontier.py)."""

from __future__ import annotations

import os

import pytest
from agentsensus import Error, StalePlanError, Store


def test_versions_start_at_one_and_republishing_makes_a_new_version(store):
    f = store.fence
    assert f.publish("req", "alice", "v1") == 1
    assert f.publish("req", "alice", "v1") == 2
    assert f.head("req") == 2
    assert f.value("req", 1) == b"v1" and f.owner("req") == "alice"


def test_writing_a_key_as_another_owner_is_refused(store):
    f = store.fence
    f.publish("req", "alice", b"x")
    with pytest.raises(ValueError, match="owned by 'alice', not 'bob'"):
        f.publish("req", "bob", b"y")
    with pytest.raises(ValueError, match="owned by 'alice'"):
        f.derive("req", "bob", b"y", {"req": 1})
    assert f.head("req") == 1


def test_head_of_unknown_key_raises_keyerror(store):
    with pytest.raises(KeyError):
        store.fence.head("nope")


def test_check_reports_what_moved_and_asks_each_owner_once(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.publish("extra", "alice", "e")
    f.publish("budget", "bob", "b")
    f.derive("plan", "dave", "p", {"req": 1, "extra": 1, "budget": 1})
    c = f.check("plan")
    assert c.current and c.stale == [] and c.owners_asked == 2 and 0 < c.bytes < 100
    f.publish("req", "alice", "r2")
    c = f.check("plan")
    assert not c.current
    assert [(s.key, s.owner, s.recorded, s.head) for s in c.stale] == [("req", "alice", 1, 2)]
    assert "alice" in c.stale[0].reason


def test_early_cutoff_a_head_with_the_recorded_content_is_current(store):
    f = store.fence
    f.publish("req", "alice", "same")
    f.derive("plan", "dave", "p", {"req": 1})
    f.publish("req", "alice", "same")  # a new version, identical content
    assert f.head("req") == 2
    assert f.check("plan").current
    f.publish("req", "alice", "other")
    assert not f.check("plan").current


def test_guard_replans_once_then_returns_a_current_check(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.derive("plan", "dave", "p1", {"req": 1})
    f.publish("req", "alice", "r2")
    calls = []

    def replan(check):
        calls.append(check)
        f.derive("plan", "dave", "p2", {"req": f.head("req")})

    c = f.guard("plan", replan=replan)
    assert c.current and len(calls) == 1 and not calls[0].current
    assert f.head("plan") == 2 and f.value("plan") == b"p2"


def test_guard_blocks_when_the_replan_does_not_fix_the_plan(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.derive("plan", "dave", "p1", {"req": 1})
    f.publish("req", "alice", "r2")
    with pytest.raises(StalePlanError) as e:
        f.guard("plan", replan=lambda c: None)
    assert not e.value.check.current and "req" in str(e.value)
    assert isinstance(e.value, Error)


def test_a_replan_that_raises_blocks_and_leaves_the_lineage_unchanged(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.derive("plan", "dave", "p1", {"req": 1})
    f.publish("req", "alice", "r2")

    def replan(check):
        f.derive("plan", "dave", "half", {"req": 2})
        f.publish("note", "dave", "written during replan")
        raise RuntimeError("the model timed out")

    with pytest.raises(StalePlanError, match="replan raised RuntimeError: the model timed out") as e:
        f.guard("plan", replan=replan)
    assert isinstance(e.value.__cause__, RuntimeError)
    assert f.head("plan") == 1 and "note" not in f.keys()


def test_a_current_plan_passes_guard_without_calling_replan(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.derive("plan", "dave", "p1", {"req": 1})
    assert f.guard("plan", replan=lambda c: pytest.fail("replan called")).current


def test_heads_callable_missing_keys_and_failing_owners_block(store):
    f = store.fence
    f.publish("req", "alice", "r1")
    f.publish("budget", "bob", "b1")
    f.derive("plan", "dave", "p", {"req": 1, "budget": 1})
    asked = []

    def heads(owner, keys):
        asked.append((owner, keys))
        if owner == "bob":
            raise ConnectionError("bob is offline")
        return {}

    c = f.check("plan", heads=heads)
    assert sorted(asked) == [("alice", ["req"]), ("bob", ["budget"])]
    assert not c.current and c.owners_asked == 2
    reasons = {s.key: s.reason for s in c.stale}
    assert "does not know 'req'" in reasons["req"]
    assert "'bob'" in reasons["budget"] and "offline" in reasons["budget"]
    good = f.check("plan", heads=lambda o, ks: {k: (f.head(k)) for k in ks})
    assert good.current


def test_heads_with_digests_allow_the_early_cutoff(store):
    f = store.fence
    f.publish("req", "alice", "same")
    f.derive("plan", "dave", "p", {"req": 1})
    digest = f.frontier("plan")[0].digest
    assert f.check("plan", heads=lambda o, ks: {"req": (5, digest)}).current
    assert not f.check("plan", heads=lambda o, ks: {"req": 5}).current


def test_check_all_asks_every_key(store):
    f = store.fence
    for i in range(10):
        f.publish(f"k{i}", "alice" if i % 2 else "bob", str(i))
    c = f.check_all()
    assert c.current and c.owners_asked == 2 and c.bytes > 0


def test_lineage_survives_reopen_and_reads_in_a_readonly_store(tmp_path):
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=4) as s:
        s.fence.publish("req", "alice", "r1")
        s.fence.derive("plan", "dave", "p", {"req": 1})
    with Store(path, readonly=True) as s:
        assert s.fence.head("plan") == 1 and s.fence.check("plan").current
        with pytest.raises(Error, match="read-only"):
            s.fence.publish("req", "alice", "r2")


def test_a_readonly_store_without_lineage_tables_has_an_empty_lineage(tmp_path):
    import subprocess
    import sys

    path = os.fspath(tmp_path / "old")
    # A store as it was before lineage existed: only the engine's tables.
    code = (
        "import sys; sys.path[:0] = %r\n"
        "from agentsensus import _core\n"
        "e = _core.Engine(%r, 4, _core.Metric.cos, True, True, False, True, 4096, 1 << 24)\n"
        "e.close()\n" % (sys.path, path)
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with Store(path, readonly=True) as s:
        assert s.fence.keys() == []
        with pytest.raises(KeyError):
            s.fence.head("x")
        assert s.fence.check_all().current


def test_a_closed_store_refuses_fence_calls(tmp_path):
    s = Store(os.fspath(tmp_path / "s"), dim=4)
    f = s.fence
    f.publish("a", "o", "x")
    s.close()
    with pytest.raises(Error, match="closed"):
        f.head("a")
    with pytest.raises(Error, match="closed"):
        _ = s.fence
