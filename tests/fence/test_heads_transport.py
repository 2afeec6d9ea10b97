"""Owners in other processes: two owner processes serve their heads over the
real HTTP transport (aiohttp) on 127.0.0.1; a planner checks against them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Iterator

import pytest
from agentsensus import StalePlanError, Store
from agentsensus.planfence.transport import HeadsClient, HeadsServer, OwnerUnavailable
from fake_owners import FakeOwner, echo_spoof
from owner_client import Owner

pytestmark = pytest.mark.slow  # owner processes over HTTP

TOKEN = "the owners' shared token, 32 bytes"


@pytest.fixture
def owners(tmp_path, request) -> Iterator[dict[str, Owner]]:
    token = getattr(request, "param", None)  # a test may ask for owners with a token
    o = {
        "alice": Owner(os.fspath(tmp_path / "alice"), "alice", ["req", "scope-doc"], token),
        "bob": Owner(os.fspath(tmp_path / "bob"), "bob", ["budget"], token),
    }
    yield o
    for x in o.values():
        x.stop()


def _client(owners: dict[str, Owner], timeout: float) -> HeadsClient:
    token = next(iter(owners.values())).token
    return HeadsClient({o: x.url for o, x in owners.items()}, timeout=timeout, token=token)


def _plan(store: Store, client: HeadsClient) -> None:
    f = store.fence
    for owner, key in (("alice", "req"), ("alice", "scope-doc"), ("bob", "budget")):
        version, value = client.fetch(owner, key)
        f.observe(key, owner, version, value)
    f.derive("plan", "planner", "the plan", {k: f.head(k) for k in ("req", "scope-doc", "budget")})


@pytest.mark.parametrize("owners", [None, TOKEN], ids=["open", "token"], indirect=True)
def test_a_revision_in_another_process_is_caught_and_replanned(tmp_path, owners):
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store, _client(owners, timeout=5) as client:
        _plan(store, client)
        f = store.fence
        c = f.check("plan", heads=client)
        assert c.current and c.owners_asked == 2 and c.bytes > 0
        assert owners["alice"].publish("req", "revised requirement") == 2
        c = f.check("plan", heads=client)
        assert not c.current
        assert [(s.key, s.owner, s.recorded, s.head) for s in c.stale] == [("req", "alice", 1, 2)]
        c = f.guard("plan", heads=client, replan=lambda c: _plan(store, client))
        assert c.current and f.head("plan") == 2
        assert f.frontier("plan")[0].version == 2


def test_identical_republish_in_another_process_is_current_by_digest(tmp_path, owners):
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store, _client(owners, timeout=5) as client:
        _plan(store, client)
        owners["bob"].publish("budget", "budget v1")  # same content as version 1
        assert store.fence.check("plan", heads=client).current


def test_an_unreachable_owner_blocks_with_a_reason_naming_it(tmp_path, owners):
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store:
        with _client(owners, timeout=5) as client:
            _plan(store, client)
        owners["bob"].stop()
        with _client(owners, timeout=5) as client:
            c = store.fence.check("plan", heads=client)
            assert not c.current
            assert [s.key for s in c.stale] == ["budget"]
            assert "'bob'" in c.stale[0].reason and "unreachable" in c.stale[0].reason
            with pytest.raises(StalePlanError, match="bob"):
                store.fence.guard("plan", heads=client, replan=lambda c: None)


def test_an_owner_that_hangs_times_out_and_blocks(tmp_path, owners):
    with Store(os.fspath(tmp_path / "planner"), dim=4) as store:
        with _client(owners, timeout=5) as client:
            _plan(store, client)
        os.kill(owners["alice"].p.pid, signal.SIGSTOP)  # alive, but never answers
        try:
            with _client(owners, timeout=0.5) as client:
                c = store.fence.check("plan", heads=client)
        finally:
            os.kill(owners["alice"].p.pid, signal.SIGCONT)
        assert not c.current
        assert {s.key for s in c.stale} == {"req", "scope-doc"}
        assert all("'alice'" in s.reason and "within 0.5 s" in s.reason for s in c.stale)


def test_server_refuses_owners_it_does_not_serve_and_bad_queries(tmp_path):
    with Store(os.fspath(tmp_path / "s"), dim=4) as store:
        store.fence.publish("k", "alice", "v")
        with (
            HeadsServer(store, "alice") as server,
            HeadsClient({"alice": server.url, "mallory": server.url}, timeout=5) as client,
        ):
            assert client("alice", ["k", "zz"]) == {"k": 1}
            assert client.fetch("alice", "k") == (1, b"v")
            with pytest.raises(OwnerUnavailable, match="HTTP 404"):
                client("mallory", ["k"])
            bad = client.ask_encoded({"alice": b"\x07garbage"})["alice"]
            assert isinstance(bad, OwnerUnavailable) and "HTTP 400" in str(bad)
            with pytest.raises(KeyError):
                client.fetch("alice", "zz")


def test_client_and_server_refuse_bad_configuration(tmp_path):
    with pytest.raises(ValueError, match="URL"):
        HeadsClient({"alice": "ftp://x"})
    with pytest.raises(ValueError, match="timeout"):
        HeadsClient({}, timeout=0)
    with Store(os.fspath(tmp_path / "s"), dim=4) as store:
        with pytest.raises(ValueError, match="owners"):
            HeadsServer(store, [])
        with pytest.raises(ValueError, match="port"):
            HeadsServer(store, "a", port=70000)


def test_a_spoof_on_a_stopped_owner_process_port_cannot_pass_a_stale_plan(tmp_path):
    """The issue's attack: alice's owner process stops and a spoof that
    echoes the recorded versions takes its port. With the token the stale
    plan is blocked, naming alice; without it, the same spoof passes."""
    for token in (TOKEN, None):
        o = {"alice": Owner(os.fspath(tmp_path / f"alice-{bool(token)}"), "alice", ["req", "scope-doc"], token)}
        try:
            with Store(os.fspath(tmp_path / f"planner-{bool(token)}"), dim=4) as store:
                f = store.fence
                with _client(o, timeout=5) as client:
                    for key in ("req", "scope-doc"):
                        version, value = client.fetch("alice", key)
                        f.observe(key, "alice", version, value)
                    f.derive("plan", "planner", "the plan", {k: f.head(k) for k in ("req", "scope-doc")})
                    o["alice"].publish("req", "revised requirement")
                    assert not f.check("plan", heads=client).current
                port = int(o["alice"].url.rsplit(":", 1)[1])
                o["alice"].stop()
                with FakeOwner(echo_spoof(), port=port), _client(o, timeout=5) as client:
                    c = f.check("plan", heads=client)
                    if token is None:
                        assert c.current  # the attack, where nothing proves who answers
                        continue
                    assert not c.current
                    assert all("'alice'" in s.reason and "failed verification" in s.reason for s in c.stale)
                    with pytest.raises(StalePlanError, match="alice"):
                        f.guard("plan", heads=client, replan=lambda c: None)
        finally:
            o["alice"].stop()


def _serve(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, "-m", "agentsensus.planfence.transport", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_the_module_serves_with_a_token_file_and_refuses_bad_setups_in_one_line(tmp_path):
    path = os.fspath(tmp_path / "s")
    with Store(path, dim=4) as store:
        store.fence.publish("k", "alice", "v")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    p = _serve([path, "--owner", "alice", "--token-file", os.fspath(token)])
    try:
        line = p.stdout.readline()
        assert line.startswith("listening http://127.0.0.1:"), line + p.stderr.read()
        url = line.split()[1]
        with HeadsClient({"alice": url}, token=TOKEN, timeout=5) as c:
            assert c("alice", ["k"]) == {"k": 1}
        with HeadsClient({"alice": url}, timeout=5) as c:
            with pytest.raises(OwnerUnavailable, match="HTTP 401"):
                c("alice", ["k"])
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    assert p.returncode == 0
    token.chmod(0o644)
    refusals = [
        (_serve(args), message)  # started together: each is an interpreter start
        for args, message in (
            ([path, "--owner", "alice", "--host", "0.0.0.0"], "not a loopback address"),
            ([path, "--owner", "alice", "--token-file", os.fspath(token)], "chmod 600"),
            ([os.fspath(tmp_path / "nothing"), "--owner", "alice"], "error"),
            ([path, "--owner", "alice", "--tls-cert", os.fspath(token)], "go together"),
        )
    ]
    for p, message in refusals:
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        assert p.returncode == 2 and out == "", (p.args, out, err)
        assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err, err
