"""Planfence heads transport under abuse, and the cost of its MAC.

    python bench/transport_abuse.py [--checks N]

An owner's heads server runs as its own process (``python -m
agentsensus.planfence.transport``, the installed package, default limits).
A planner in this process checks a plan over 8 of the owner's keys, N times
in a row, timing each check. Scenarios, each measured in this run:

- idle: nothing else talks to the server (open and token servers, both up,
  measured in alternating rounds);
- abuse: a second process runs 8 abusive clients at once: 4 send head queries
  at the key cap (65,536 keys of 100 bytes, about 6.6 MB each) back to back,
  4 each hold 25 connections that trickle header bytes (slow loris);
- with a token, the abusers either lack it (outsiders: their queries are
  read, then refused) or hold it (a faulty insider: every query is answered).

The table gives each scenario's median and p99 check latency, the ratio of
the median to idle (same mode), checks that were not current (blocked),
and what the abusers got done. Then the MAC's own CPU cost per check (sign
the request, verify it, seal the answer, verify it; 8-key query) timed in
this process, beside the median idle check it adds to.

Only 127.0.0.1 is used. The machine is shared with other work: read the
ratios, which are taken within one run, rather than absolute times.
"""

from __future__ import annotations

import argparse
import http.client
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Optional

TOKEN = secrets.token_urlsafe(32)
N_KEYS = 200  # keys the owner publishes; the plan reads 8 of them
HUGE_KEYS = 65536
HUGE_KEY_LEN = 100
SLOW_PER_CLIENT = 25
ABUSE_DEADLINE = 900.0  # seconds: an abuser process never outlives this


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


# -- the abuser process --------------------------------------------------------------


def _huge_query() -> bytes:
    from agentsensus import _core

    keys = sorted({secrets.token_hex(HUGE_KEY_LEN // 2) for _ in range(HUGE_KEYS)})
    return bytes(_core.Lineage.encode_query([(k, 1) for k in keys]))


def _abuse(port: int, token: Optional[str]) -> None:
    """Runs the 8 abusive clients until stdin closes (or the deadline)."""
    from agentsensus.planfence import transport_auth as auth

    stop = threading.Event()
    counts = {"answered": 0, "refused": 0, "errors": 0, "slow_dropped": 0}
    lock = threading.Lock()
    query = _huge_query()
    keys = auth.Keys(token) if token else None
    end = time.monotonic() + ABUSE_DEADLINE

    def count(what: str) -> None:
        with lock:
            counts[what] += 1

    def huge() -> None:
        c: Optional[http.client.HTTPConnection] = None
        while not stop.is_set() and time.monotonic() < end:
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                nonce = secrets.token_bytes(auth.NONCE_BYTES)
                h = {"Content-Type": "application/octet-stream", auth.H_NONCE: nonce.hex()}
                if keys is not None:
                    h.update(auth.sign_request(keys, b"heads", "alice", nonce, query))
                c.request("POST", "/v1/heads/alice", body=query, headers=h)
                r = c.getresponse()
                r.read()
                count("answered" if r.status == 200 else "refused")
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    c = None
            except (OSError, http.client.HTTPException):
                count("errors")
                if c is not None:
                    c.close()
                c = None
                stop.wait(0.01)

    def slow() -> None:
        socks: list[socket.socket] = []
        while not stop.is_set() and time.monotonic() < end:
            while len(socks) < SLOW_PER_CLIENT:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(b"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    socks.append(s)
                except OSError:
                    count("errors")
                    break
            for s in list(socks):
                try:
                    s.sendall(b"X")  # one more byte of a header line that never ends
                except OSError:
                    s.close()
                    socks.remove(s)
                    count("slow_dropped")
            stop.wait(0.5)
        for s in socks:
            s.close()

    threads = [threading.Thread(target=huge, daemon=True) for _ in range(4)]
    threads += [threading.Thread(target=slow, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    print("abusing", flush=True)
    sys.stdin.read()  # the parent closes stdin to end the abuse
    stop.set()
    for t in threads:
        t.join(60)
    print(" ".join(f"{k}={v}" for k, v in counts.items()), flush=True)


# -- the measuring process -------------------------------------------------------------


class Server:
    def __init__(self, path: str, token_file: Optional[str]) -> None:
        args = [sys.executable, "-m", "agentsensus.planfence.transport", path, "--owner", "alice"]
        if token_file:
            args += ["--token-file", token_file]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline() if self.p.stdout else ""
        if not line.startswith("listening "):
            self.stop()
            raise SystemExit(f"the heads server did not start: {line!r}")
        self.url = line.split()[1]
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Abusers:
    def __init__(self, port: int, token: Optional[str]) -> None:
        args = [sys.executable, os.path.abspath(__file__), "--abuse", str(port)]
        if token:
            args += ["--token", token]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline() if self.p.stdout else ""
        if line.strip() != "abusing":
            self.stop()
            raise SystemExit(f"the abusers did not start: {line!r}")
        time.sleep(2.0)  # let every abuser reach its steady state

    def stop(self) -> str:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.close()
        try:
            out = self.p.stdout.read()
            self.p.wait(90)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            out = "(killed)"
        return out.strip()


def measure(store, client, n: int) -> tuple[list[float], int]:  # type: ignore[no-untyped-def]
    times, blocked = [], 0
    for i in range(n + 10):
        t0 = time.perf_counter()
        c = store.fence.check("plan", heads=client)
        dt = time.perf_counter() - t0
        if i >= 10:  # the first ten warm the connection
            times.append(dt)
            blocked += not c.current
    return times, blocked


def mac_cost(rounds: int = 20000) -> float:
    """Seconds of CPU per check spent on the MAC, both sides, 8-key query."""
    from agentsensus import _core
    from agentsensus.planfence import transport_auth as auth

    keys = auth.Keys(TOKEN)
    seen = auth.SeenNonces(cap=rounds + 1)
    query = bytes(_core.Lineage.encode_query([(f"input-{i}", 1) for i in range(8)]))
    answer = bytes(_core.Lineage.encode_answer([(1, True)] * 8))
    t0 = time.perf_counter()
    for _ in range(rounds):
        nonce = secrets.token_bytes(auth.NONCE_BYTES)
        h = auth.sign_request(keys, b"heads", "alice", nonce, query)
        claimed = auth.parse_digest(h[auth.H_DIGEST])
        assert auth.verify_request(keys, seen, b"heads", "alice", nonce, claimed, h[auth.H_TIME], h[auth.H_MAC]) is None
        d = auth.digest(query)
        assert claimed == d
        m = auth.answer_mac(keys, b"heads", "alice", nonce, d, b"", answer).hex()
        assert auth.answer_is_authentic(keys, b"heads", "alice", nonce, auth.digest(query), b"", answer, m)
    return (time.perf_counter() - t0) / rounds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checks", type=int, default=300, help="timed checks per scenario")
    ap.add_argument("--abuse", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--token", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.abuse is not None:
        _abuse(a.abuse, a.token)
        return 0

    from agentsensus import Store
    from agentsensus.planfence.transport import HeadsClient

    rows: list[tuple[str, list[float], int, str]] = []
    with tempfile.TemporaryDirectory(prefix="transport-abuse-") as d:
        owner_path = os.path.join(d, "alice")
        with Store(owner_path, dim=4) as s:
            for i in range(N_KEYS):
                s.fence.publish(f"input-{i}", "alice", f"value {i}")
        token_file = os.path.join(d, "token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(TOKEN)
        with Store(os.path.join(d, "planner"), dim=4) as planner:
            servers = {"open": Server(owner_path, None)}
            try:
                servers["token"] = Server(owner_path, token_file)
                clients = {
                    "open": HeadsClient({"alice": servers["open"].url}, timeout=5),
                    "token": HeadsClient({"alice": servers["token"].url}, token=TOKEN, timeout=5),
                }
                for i in range(8):
                    version, value = clients["token"].fetch("alice", f"input-{i}")
                    planner.fence.observe(f"input-{i}", "alice", version, value)
                planner.fence.derive("plan", "planner", "p", {f"input-{i}": 1 for i in range(8)})
                # Idle: both modes in alternating rounds, so drift on the shared
                # machine falls on both alike.
                print(f"measuring idle, open and token alternating ({a.checks} checks each) ...", flush=True)
                idle_times: dict[str, list[float]] = {"open": [], "token": []}
                idle_blocked = {"open": 0, "token": 0}
                rounds = 6
                for r in range(rounds):
                    for mode in (("open", "token") if r % 2 == 0 else ("token", "open")):
                        t, b = measure(planner, clients[mode], a.checks // rounds)
                        idle_times[mode] += t
                        idle_blocked[mode] += b
                for mode in ("open", "token"):
                    rows.append((f"{mode}: idle", idle_times[mode], idle_blocked[mode], ""))
                for mode, name, abuser_token in (
                    ("open", "abuse", None),
                    ("token", "abuse, outsiders", None),
                    ("token", "abuse, insiders", TOKEN),
                ):
                    label = f"{mode}: {name}"
                    print(f"measuring {label} ({a.checks} checks) ...", flush=True)
                    abusers = Abusers(servers[mode].port, abuser_token)
                    try:
                        times, blocked = measure(planner, clients[mode], a.checks)
                    finally:
                        note = abusers.stop()
                    rows.append((label, times, blocked, note))
                for c in clients.values():
                    c.close()
            finally:
                for server in servers.values():
                    server.stop()

    cost = mac_cost()
    print()
    print(f"{'scenario':<24} {'median ms':>10} {'p99 ms':>9} {'x idle':>7} {'blocked':>8}  abusers")
    idle: dict[str, float] = {}
    for label, times, blocked, note in rows:
        med = statistics.median(times)
        mode = label.split(":")[0]
        idle.setdefault(mode, med)
        print(
            f"{label:<24} {med * 1e3:>10.2f} {percentile(times, 0.99) * 1e3:>9.2f} "
            f"{med / idle[mode]:>7.2f} {blocked:>8}  {note}"
        )
    print()
    med_open, med_token = idle["open"], idle["token"]
    print(f"MAC CPU per check (sign + verify request, seal + verify answer): {cost * 1e6:.1f} us")
    print(f"idle check median: open {med_open * 1e3:.2f} ms, token {med_token * 1e3:.2f} ms "
          f"(ratio {med_token / med_open:.2f}); MAC CPU is {cost / med_open * 100:.1f}% of the open median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
