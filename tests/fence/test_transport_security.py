"""The heads transport under attack, on 127.0.0.1: spoofed, squatting and
replaying servers, unauthenticated and browser-shaped requests, slow and
huge clients, TLS with certificates made here. Every server is stopped by
its test; every loop has a bound."""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import time
from typing import Iterator, Optional

import pytest
from agentsensus import StalePlanError, Store
from agentsensus.planfence import transport_auth as auth
from agentsensus.planfence.transport import (
    AnswerNotAuthentic,
    HeadsClient,
    HeadsServer,
    OwnerUnavailable,
    client_ssl_context,
    read_token_file,
    server_ssl_context,
)
from fake_owners import FakeOwner, RecordingProxy, echo_spoof
from hypothesis import given, settings
from hypothesis import strategies as st

TOKEN = "a shared token of the owners, 32 b"
KEYS = ("req", "scope-doc")


@pytest.fixture
def owner(tmp_path) -> Iterator[Store]:
    with Store(os.fspath(tmp_path / "alice"), dim=4) as s:
        for k in KEYS:
            s.fence.publish(k, "alice", f"{k} v1")
        yield s


@pytest.fixture
def planner(tmp_path) -> Iterator[Store]:
    with Store(os.fspath(tmp_path / "planner"), dim=4) as s:
        yield s


def _plan(planner: Store, client: HeadsClient) -> None:
    f = planner.fence
    for k in KEYS:
        version, value = client.fetch("alice", k)
        f.observe(k, "alice", version, value)
    f.derive("plan", "planner", "the plan", {k: f.head(k) for k in KEYS})


def _stale_plan(owner: Store, planner: Store, server: HeadsServer) -> None:
    """A plan on version 1 of both keys, then 'req' moves to version 2."""
    with HeadsClient({"alice": server.url}, token=TOKEN, timeout=5) as c:
        _plan(planner, c)
        assert planner.fence.check("plan", heads=c).current
    owner.fence.publish("req", "alice", "revised requirement")


def _assert_refused_naming_alice(planner: Store, client: HeadsClient, what: str) -> None:
    c = planner.fence.check("plan", heads=client)
    assert not c.current
    assert {s.key for s in c.stale} == set(KEYS)
    assert all("'alice'" in s.reason and what in s.reason for s in c.stale), c.stale
    with pytest.raises(StalePlanError, match="alice"):
        planner.fence.guard("plan", heads=client, replan=lambda c: None)


def _raw(
    port: int, method: str, path: str, body: Optional[bytes] = None, headers: Optional[dict[str, str]] = None
) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def _nonce() -> dict[str, str]:
    return {auth.H_NONCE: secrets.token_hex(auth.NONCE_BYTES)}


def _query(*keys: str) -> bytes:
    from agentsensus import _core

    return bytes(_core.Lineage.encode_query([(k, 1) for k in sorted(keys)]))


# -- spoofing, squatting, replay ------------------------------------------------------


def test_a_spoof_that_echoes_recorded_versions_is_refused(owner, planner):
    with HeadsServer(owner, "alice", token=TOKEN) as server:
        _stale_plan(owner, planner, server)
    for mac in (None, "00" * 32):
        with FakeOwner(echo_spoof(mac)) as spoof:
            # Without a token the spoof works: this is the attack.
            with HeadsClient({"alice": spoof.url}, timeout=5) as c:
                assert planner.fence.check("plan", heads=c).current
            with HeadsClient({"alice": spoof.url}, token=TOKEN, timeout=5) as c:
                _assert_refused_naming_alice(planner, c, "failed verification")
                with pytest.raises(AnswerNotAuthentic, match="'alice'"):
                    c("alice", ["req"])
            assert spoof.requests >= 3


def test_a_squatter_on_the_stopped_servers_port_is_refused(owner, planner):
    server = HeadsServer(owner, "alice", token=TOKEN).start()
    try:
        _stale_plan(owner, planner, server)
        url, port = server.url, server.port
    finally:
        server.stop()
    with FakeOwner(echo_spoof(), port=port) as squatter, HeadsClient({"alice": url}, token=TOKEN, timeout=5) as c:
        _assert_refused_naming_alice(planner, c, "failed verification")
        assert squatter.requests >= 2


def test_a_replayed_answer_is_refused(owner, planner):
    with HeadsServer(owner, "alice", token=TOKEN) as server:
        with HeadsClient({"alice": server.url}, token=TOKEN, timeout=5) as c:
            _plan(planner, c)
        proxy = RecordingProxy(server.port)
        with FakeOwner(proxy) as mitm, HeadsClient({"alice": mitm.url}, token=TOKEN, timeout=5) as c:
            assert planner.fence.check("plan", heads=c).current  # forwarded, and recorded
            owner.fence.publish("req", "alice", "revised requirement")
            proxy.replaying = True  # the answer that said "current", sent again
            _assert_refused_naming_alice(planner, c, "does not match this request")
            # a recorded value answer does not pass either
            proxy.replaying = False
            assert c.fetch("alice", "req")[0] == 2
            owner.fence.publish("req", "alice", "third")
            proxy.replaying = True
            with pytest.raises(AnswerNotAuthentic, match="'alice'"):
                c.fetch("alice", "req")


def test_a_replayed_request_is_refused(owner):
    with HeadsServer(owner, "alice", token=TOKEN) as server:
        q = _query("req")
        nonce = secrets.token_bytes(auth.NONCE_BYTES)
        h = {
            "Content-Type": "application/octet-stream",
            auth.H_NONCE: nonce.hex(),
            **auth.sign_request(auth.Keys(TOKEN), b"heads", "alice", nonce, q),
        }
        assert _raw(server.port, "POST", "/v1/heads/alice", q, h)[0] == 200
        assert _raw(server.port, "POST", "/v1/heads/alice", q, h) == (401, b"not authenticated")
        # the same MAC on another body or owner is no good either
        h2 = dict(h, **{auth.H_NONCE: secrets.token_hex(auth.NONCE_BYTES)})
        assert _raw(server.port, "POST", "/v1/heads/alice", q, h2)[0] == 401
        # a well-signed request dated outside the skew window (its nonce long forgotten)
        for skew in (-3600, 3600):
            n2 = secrets.token_bytes(auth.NONCE_BYTES)
            old = {
                "Content-Type": "application/octet-stream",
                auth.H_NONCE: n2.hex(),
                **auth.sign_request(auth.Keys(TOKEN), b"heads", "alice", n2, q, now=time.time() + skew),
            }
            assert _raw(server.port, "POST", "/v1/heads/alice", q, old) == (401, b"not authenticated")
        h3 = dict(h, **{auth.H_NONCE: n2.hex()})  # a well-dated one with a fresh nonce passes
        h3.update(auth.sign_request(auth.Keys(TOKEN), b"heads", "alice", n2, q))
        n4 = secrets.token_bytes(auth.NONCE_BYTES)  # good headers, another body: refused
        h4 = dict(h, **{auth.H_NONCE: n4.hex()}, **auth.sign_request(auth.Keys(TOKEN), b"heads", "alice", n4, q))
        assert _raw(server.port, "POST", "/v1/heads/alice", _query("scope-doc"), h4) == (401, b"not authenticated")
        assert _raw(server.port, "POST", "/v1/heads/alice", q, h3)[0] == 200


def test_a_client_without_the_token_is_refused_before_its_body_is_read(owner):
    with HeadsServer(owner, "alice", token=TOKEN, body_timeout=60) as server:
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        try:
            s.sendall(
                f"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                f"Content-Type: application/octet-stream\r\n{auth.H_NONCE}: {'ab' * 16}\r\n"
                f"{auth.H_TIME}: {int(time.time())}\r\n{auth.H_DIGEST}: {'00' * 32}\r\n{auth.H_MAC}: {'00' * 32}\r\n"
                "Content-Length: 4000000\r\n\r\n".encode()
            )
            # answered (and closed) without waiting for the 4 MB that never come
            assert s.recv(4096).startswith(b"HTTP/1.1 401")
        finally:
            s.close()


def test_a_wrong_or_missing_token_is_refused_and_blocks_naming_the_owner(owner, planner):
    with HeadsServer(owner, "alice", token=TOKEN) as server:
        _stale_plan(owner, planner, server)
        for token in (None, "another token of 32 bytes, wrong!"):
            with HeadsClient({"alice": server.url}, token=token, timeout=5) as c:
                _assert_refused_naming_alice(planner, c, "HTTP 401")
                with pytest.raises(OwnerUnavailable, match="token is missing or does not match"):
                    c.fetch("alice", "req")
        # a server without a token, a client with one: nothing proves the answer
        with HeadsServer(owner, "alice") as open_server:
            with HeadsClient({"alice": open_server.url}, token=TOKEN, timeout=5) as c:
                _assert_refused_naming_alice(planner, c, "carries no MAC")
        with HeadsClient({"alice": server.url}, token=TOKEN, timeout=5) as c:
            # the right token: the stale plan is caught and replanned
            assert planner.fence.guard("plan", heads=c, replan=lambda chk: _plan(planner, c)).current


# -- requests that learn nothing ---------------------------------------------------------


def test_errors_do_not_say_what_exists(owner):
    owner.fence.publish("bobs-key", "bob", "x")
    with HeadsServer(owner, ["alice", "bob"]) as open_server:
        p = open_server.port
        answers = {
            _raw(p, "GET", path, headers=_nonce())
            for path in (
                "/v1/value/alice?key=nope",  # unknown key
                "/v1/value/alice?key=bobs-key",  # another owner's key
                "/v1/value/mallory?key=req",  # unknown owner
            )
        }
        assert answers == {(404, b"not found")}
        assert _raw(
            p, "POST", "/v1/heads/mallory", _query("req"), {"Content-Type": "application/octet-stream", **_nonce()}
        ) == (
            404,
            b"not found",
        )
    with HeadsServer(owner, "alice", token=TOKEN) as server:
        # without the token, a served and an unserved owner look the same
        p = server.port
        h = {"Content-Type": "application/octet-stream", **_nonce()}
        assert _raw(p, "POST", "/v1/heads/alice", _query("req"), h) == (401, b"not authenticated")
        assert _raw(p, "POST", "/v1/heads/mallory", _query("req"), h) == (401, b"not authenticated")
        assert _raw(p, "GET", "/v1/value/alice?key=req", headers=_nonce()) == (401, b"not authenticated")
        assert _raw(p, "GET", "/v1/value/mallory?key=req", headers=_nonce()) == (401, b"not authenticated")


def test_browser_shaped_requests_are_refused(owner):
    with HeadsServer(owner, "alice") as server:
        p, q = server.port, _query("req")
        ok = {"Content-Type": "application/octet-stream", **_nonce()}
        assert _raw(p, "POST", "/v1/heads/alice", q, ok)[0] == 200
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            assert _raw(p, "POST", "/v1/heads/alice", q, {"Content-Type": ctype, **_nonce()})[0] == 415
        assert _raw(p, "POST", "/v1/heads/alice", q, _nonce())[0] == 415  # no Content-Type at all
        assert _raw(p, "POST", "/v1/heads/alice", q, {"Content-Type": "application/octet-stream"})[0] == 400
        assert _raw(p, "GET", "/v1/value/alice?key=req")[0] == 400  # no nonce header: a page's plain GET
        assert _raw(p, "POST", "/v1/heads/alice", q, dict(ok, Origin="http://evil.example"))[0] == 403
        assert _raw(p, "OPTIONS", "/v1/heads/alice")[0] == 405  # no preflight is ever granted


def test_a_host_header_the_server_does_not_serve_is_refused(owner):
    with HeadsServer(owner, "alice", allowed_hosts=["heads.internal"]) as server:
        p = server.port
        for host, status in (
            (f"127.0.0.1:{p}", 200),
            (f"localhost:{p}", 200),
            (f"heads.internal:{p}", 200),
            (f"evil.example:{p}", 421),  # DNS rebinding: a page's name resolving to 127.0.0.1
            (f"127.0.0.1:{p + 1 if p < 65535 else p - 1}", 421),
            ("127.0.0.1", 421),
            ("", 421),
        ):
            assert _raw(p, "GET", "/v1/value/alice?key=req", headers={"Host": host, **_nonce()})[0] == status, host


# -- slow and huge clients ---------------------------------------------------------------


def _dropped(sock: socket.socket, trickle: bytes, rounds: int = 100) -> bool:
    """Sends ``trickle`` one byte per 0.1 s; True once the server closed."""
    sock.settimeout(0.1)
    for i in range(rounds):
        try:
            sock.send(trickle[i % len(trickle) : i % len(trickle) + 1])
            data = sock.recv(4096)
            if data == b"" or data.startswith(b"HTTP/1.1 408"):
                return True
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_slow_connections_are_dropped_and_checks_go_on(owner, planner):
    with HeadsServer(owner, "alice", header_timeout=0.5, body_timeout=0.5) as server:
        with HeadsClient({"alice": server.url}, timeout=5) as c:
            _plan(planner, c)
        slow = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(20)]
        try:
            for s in slow:
                s.sendall(b"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            with HeadsClient({"alice": server.url}, timeout=5) as c:
                assert planner.fence.check("plan", heads=c).current
            assert _dropped(slow[0], b"X-Slow: aaaaaaaaaaaaaaaaaaa\r\n")
        finally:
            for s in slow:
                s.close()
        body = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        try:
            body.sendall(
                f"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                f"Content-Type: application/octet-stream\r\n{auth.H_NONCE}: {'ab' * 16}\r\n"
                "Content-Length: 100000\r\n\r\n".encode()
            )
            assert _dropped(body, b"\x01")
        finally:
            body.close()


def test_the_key_and_size_caps_are_enforced(owner):
    with (
        HeadsServer(owner, "alice", max_keys=8, max_query_bytes=2048) as server,
        HeadsClient({"alice": server.url}, timeout=5) as c,
    ):
        keys = [f"k{i}" for i in range(9)]
        assert c("alice", keys[:8]) == {}
        with pytest.raises(OwnerUnavailable, match="HTTP 413.*9 keys; the limit is 8"):
            c("alice", keys)
        big = c.ask_encoded({"alice": _query(*(f"{i}{'x' * 500}" for i in range(8)))})["alice"]
        assert isinstance(big, OwnerUnavailable) and "HTTP 413" in str(big) and "limit is 2048" in str(big)


def test_queries_beyond_the_concurrency_cap_are_refused_at_once(owner):
    with HeadsServer(owner, "alice", max_concurrent=2, body_timeout=30) as server:
        hold = []
        try:
            for _ in range(2):  # two queries whose bodies never come
                s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                s.sendall(
                    f"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                    f"Content-Type: application/octet-stream\r\n{auth.H_NONCE}: {'ab' * 16}\r\n"
                    "Content-Length: 1000\r\n\r\n".encode()
                )
                hold.append(s)
            q, h = _query("req"), {"Content-Type": "application/octet-stream", **_nonce()}
            status = 0
            for _ in range(100):  # until the server has read both heads
                status, text = _raw(server.port, "POST", "/v1/heads/alice", q, h)
                if status == 503:
                    assert b"busy" in text
                    break
                time.sleep(0.05)
            assert status == 503
        finally:
            for s in hold:
                s.close()
        for _ in range(100):  # the held slots are freed when their connections go
            status, _ = _raw(server.port, "POST", "/v1/heads/alice", q, h)
            if status == 200:
                break
            time.sleep(0.05)
        assert status == 200


# -- configuration -------------------------------------------------------------------------


def test_a_non_loopback_host_needs_a_token_tls_or_insecure(owner):
    with pytest.raises(ValueError, match="not a loopback address.*insecure=True"):
        HeadsServer(owner, "alice", host="0.0.0.0")
    HeadsServer(owner, "alice", host="0.0.0.0", token=TOKEN)  # constructed, never started
    with HeadsServer(owner, "alice", host="0.0.0.0", insecure=True) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with HeadsClient({"alice": server.url}, timeout=5) as c:
            assert c("alice", ["req"]) == {"req": 1}
    with pytest.raises(ValueError, match="not on a loopback address"):
        HeadsClient({"alice": "http://192.0.2.7:8080"})
    HeadsClient({"alice": "http://192.0.2.7:8080"}, token=TOKEN).close()  # no traffic is sent
    HeadsClient({"alice": "http://192.0.2.7:8080"}, insecure=True).close()


def test_tokens_and_token_files_are_checked(tmp_path, owner):
    with pytest.raises(ValueError, match="at least 16"):
        HeadsServer(owner, "alice", token="short")
    with pytest.raises(TypeError, match="token"):
        HeadsClient({"alice": "http://127.0.0.1:1"}, token=12345)
    with pytest.raises(ValueError, match="'bob'"):
        HeadsClient({"alice": "http://127.0.0.1:1", "bob": "http://127.0.0.1:2"}, token={"alice": TOKEN})
    f = tmp_path / "token"
    f.write_text(TOKEN + "\n")
    f.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        read_token_file(f)
    f.chmod(0o600)
    assert read_token_file(f) == TOKEN.encode()
    with pytest.raises(ValueError, match="cannot read"):
        read_token_file(tmp_path / "missing")


def test_per_owner_tokens(tmp_path, owner):
    with Store(os.fspath(tmp_path / "bob"), dim=4) as bob:
        bob.fence.publish("budget", "bob", "b1")
        other = "bob's own token, 32 bytes long.."
        with HeadsServer(owner, "alice", token=TOKEN) as a, HeadsServer(bob, "bob", token=other) as b:
            with HeadsClient({"alice": a.url, "bob": b.url}, token={"alice": TOKEN, "bob": other}, timeout=5) as c:
                assert c("alice", ["req"]) == {"req": 1} and c("bob", ["budget"]) == {"budget": 1}
            with HeadsClient({"alice": a.url, "bob": b.url}, token=TOKEN, timeout=5) as c:
                with pytest.raises(OwnerUnavailable, match="'bob'.*HTTP 401"):
                    c("bob", ["budget"])


@settings(max_examples=200, deadline=None)
@given(
    fields=st.lists(st.binary(max_size=12), min_size=6, max_size=6),
    i=st.integers(0, 5),
    flip=st.binary(min_size=1, max_size=3),
)
def test_an_answer_mac_holds_for_its_own_fields_only(fields, i, flip):
    keys = auth.Keys(TOKEN)
    op, owner, nonce, payload, version, body = fields
    owner_s = owner.decode("latin-1")
    good = auth.answer_mac(keys, op, owner_s, nonce, payload, version, body).hex()
    assert auth.answer_is_authentic(keys, op, owner_s, nonce, payload, version, body, good)
    changed = list(fields)
    changed[i] = changed[i] + flip  # any field changed, including bytes moved across a boundary
    op2, owner2, nonce2, payload2, version2, body2 = changed
    assert not auth.answer_is_authentic(keys, op2, owner2.decode("latin-1"), nonce2, payload2, version2, body2, good)
    # a request MAC over the same fields never passes as the answer's
    req = auth.mac(keys.request, op, auth.utf8(owner_s), nonce, payload, version, body).hex()
    assert not auth.answer_is_authentic(keys, op, owner_s, nonce, payload, version, body, req)


# -- TLS -----------------------------------------------------------------------------------


def _openssl(*args: str, cwd: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _ca(d: str, name: str) -> None:
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.pem",
        "-days",
        "2",
        "-subj",
        f"/CN={name}",
        cwd=d,
    )


def _leaf(d: str, name: str, ca: str, ext: str) -> None:
    with open(os.path.join(d, f"{name}.ext"), "w") as f:
        f.write(ext + "\nbasicConstraints=CA:FALSE\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    _openssl(
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        f"{name}.key",
        "-out",
        f"{name}.csr",
        "-subj",
        f"/CN={name}",
        cwd=d,
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        f"{name}.csr",
        "-CA",
        f"{ca}.pem",
        "-CAkey",
        f"{ca}.key",
        "-CAcreateserial",
        "-out",
        f"{name}.pem",
        "-days",
        "2",
        "-extfile",
        f"{name}.ext",
        cwd=d,
    )


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> str:
    d = os.fspath(tmp_path_factory.mktemp("certs"))
    _ca(d, "ca")
    _ca(d, "other-ca")
    _leaf(d, "server", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth")
    _leaf(d, "client", "ca", "extendedKeyUsage=clientAuth")
    _leaf(d, "stranger", "other-ca", "extendedKeyUsage=clientAuth")
    return d


def test_tls_and_mutual_tls(certs, owner, planner):
    p = lambda name: os.path.join(certs, name)  # noqa: E731
    tls = server_ssl_context(p("server.pem"), p("server.key"))
    with HeadsServer(owner, "alice", ssl_context=tls, token=TOKEN) as server:
        assert server.url.startswith("https://127.0.0.1:")
        with HeadsClient(
            {"alice": server.url}, ssl_context=client_ssl_context(p("ca.pem")), token=TOKEN, timeout=5
        ) as c:
            _plan(planner, c)
            assert planner.fence.check("plan", heads=c).current
        with HeadsClient({"alice": server.url}, ssl_context=client_ssl_context(p("other-ca.pem")), timeout=5) as c:
            _assert_refused_naming_alice(planner, c, "unreachable")
    mtls = server_ssl_context(p("server.pem"), p("server.key"), client_ca=p("ca.pem"))
    with HeadsServer(owner, "alice", ssl_context=mtls) as server:
        ok = client_ssl_context(p("ca.pem"), certfile=p("client.pem"), keyfile=p("client.key"))
        with HeadsClient({"alice": server.url}, ssl_context=ok, timeout=5) as c:
            assert planner.fence.check("plan", heads=c).current
        for ctx in (
            client_ssl_context(p("ca.pem")),  # no client certificate
            client_ssl_context(p("ca.pem"), certfile=p("stranger.pem"), keyfile=p("stranger.key")),  # wrong CA
        ):
            with HeadsClient({"alice": server.url}, ssl_context=ctx, timeout=5) as c:
                c3 = planner.fence.check("plan", heads=c)
                assert not c3.current and all("'alice'" in s.reason for s in c3.stale)
    with pytest.raises(ValueError, match="not https"):
        HeadsClient({"alice": "http://127.0.0.1:1"}, ssl_context=client_ssl_context(p("ca.pem")))


def test_owner_names_that_need_quoting_in_a_url_are_served_and_signed(tmp_path):
    with Store(os.fspath(tmp_path / "s"), dim=4) as s:
        for owner in ("team a/b", "zoë?#%"):
            s.fence.publish(f"k {owner}", owner, "v")
            with HeadsServer(s, owner, token=TOKEN) as server, HeadsClient({owner: server.url}, token=TOKEN) as c:
                assert c(owner, [f"k {owner}"]) == {f"k {owner}": 1}
                assert c.fetch(owner, f"k {owner}") == (1, b"v")
