"""Planfence heads transport under abuse, and the cost of its MAC.

    python bench/transport_abuse.py [--checks N] [--rounds R]

Two heads servers for one owner run as their own processes (``python -m
agentsensus.planfence.transport``, the installed package, default limits),
one open, one with ``--token-file``. A planner in this process checks a
plan over 8 of the owner's keys, timing each check. An abuser process runs
8 abusive clients at once: 4 send head queries at the key cap (65,536 keys
of 100 bytes, about 6.6 MB each) back to back, and 4 each hold 25
connections that trickle header bytes (slow loris). Scenarios:

- open: abuse: the open server; every huge query is read and answered
  (and the same with only the 4 huge-query clients, or only the 4 slow ones);
- token: abuse, outsiders: the token server, abusers without the token
  (refused from their headers, bodies never read);
- token: abuse, insiders: the token server, abusers holding the token (a
  faulty planner: every huge query is answered).

Each scenario alternates R rounds with the abusers switched off (idle) and
on (abused), N checks of each in all, so drift on the shared machine falls
on both alike; the table gives medians, p99s, their ratio, checks that were
not current (idle/abused), the CPU the server and the abuser processes
used during the abused checks (100% is one core), and what the abusers got.
Last, open and token
checks idle, alternating check by check (the MAC's cost on the wire), and the
MAC's own CPU per check (sign and verify the request, seal and verify the
answer; 8 keys), timed in this process.

Only 127.0.0.1 is used. The machine is shared with other work: read the
ratios, taken within one run, rather than absolute times.
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


def _abuse(port: int, token: Optional[str], kind: str) -> None:
    """Runs the 8 abusive clients while switched on: stdin lines ``on`` and
    ``off`` switch them (``off`` also closes every slow connection); EOF, or
    the deadline, ends them."""
    from agentsensus.planfence import transport_auth as auth

    stop, active = threading.Event(), threading.Event()
    counts = {"answered": 0, "refused": 0, "reset": 0, "slow_dropped": 0}
    lock = threading.Lock()
    query = _huge_query()
    keys = auth.Keys(token) if token else None
    end = time.monotonic() + ABUSE_DEADLINE

    def count(what: str) -> None:
        with lock:
            counts[what] += 1

    def running() -> bool:
        while not stop.is_set() and time.monotonic() < end:
            if active.wait(0.2):
                return True
        return False

    def huge() -> None:
        c: Optional[http.client.HTTPConnection] = None
        while running():
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
                count("reset")  # what a refusal that closes looks like mid-send
                if c is not None:
                    c.close()
                c = None
                stop.wait(0.01)

    def slow() -> None:
        socks: list[socket.socket] = []
        while not stop.is_set() and time.monotonic() < end:
            if not active.is_set():
                for s in socks:
                    s.close()
                socks.clear()
                active.wait(0.2)
                continue
            while len(socks) < SLOW_PER_CLIENT:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(b"POST /v1/heads/alice HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    socks.append(s)
                except OSError:
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

    threads = [threading.Thread(target=huge, daemon=True) for _ in range(4 if kind in ("both", "huge") else 0)]
    threads += [threading.Thread(target=slow, daemon=True) for _ in range(4 if kind in ("both", "slow") else 0)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for line in sys.stdin:
        (active.set if line.strip() == "on" else active.clear)()
        print("ok", flush=True)
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
    """The abuser process, switched on and off between rounds."""

    def __init__(self, port: int, token: Optional[str], kind: str) -> None:
        args = [sys.executable, os.path.abspath(__file__), "--abuse", str(port), "--kind", kind]
        if token:
            args += ["--token", token]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if self._line() != "ready":
            self.stop()
            raise SystemExit("the abusers did not start")

    def _line(self) -> str:
        return (self.p.stdout.readline() if self.p.stdout else "").strip()

    def switch(self, on: bool) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write("on\n" if on else "off\n")
        self.p.stdin.flush()
        self._line()
        if on:
            time.sleep(1.5)  # every abuser at work: slow connections open, huge queries in flight
        else:
            time.sleep(0.5)  # the last huge query drains

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
        return out.strip().splitlines()[-1] if out.strip() else ""


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(store, client, n: int, warm: int = 5) -> tuple[list[float], int]:  # type: ignore[no-untyped-def]
    times, blocked = [], 0
    for i in range(n + warm):
        t0 = time.perf_counter()
        c = store.fence.check("plan", heads=client)
        dt = time.perf_counter() - t0
        if i >= warm:  # the first ones warm the connection
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
    ap.add_argument("--checks", type=int, default=300, help="timed checks per scenario and state")
    ap.add_argument("--rounds", type=int, default=6, help="idle/abused alternations per scenario")
    ap.add_argument("--abuse", type=int, metavar="PORT", help=argparse.SUPPRESS)
    ap.add_argument("--token", help=argparse.SUPPRESS)
    ap.add_argument("--kind", default="both", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.abuse is not None:
        _abuse(a.abuse, a.token, a.kind)
        return 0

    from agentsensus import Store
    from agentsensus.planfence.transport import HeadsClient

    rows: list[tuple[str, list[float], list[float], list[int], str]] = []
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
                # Each scenario alternates rounds without and with its abusers,
                # so drift on the shared machine falls on both alike.
                for mode, name, abuser_token, kind in (
                    ("open", "abuse", None, "both"),
                    ("open", "huge queries only", None, "huge"),
                    ("open", "slow conns only", None, "slow"),
                    ("token", "abuse, outsiders", None, "both"),
                    ("token", "abuse, insiders", TOKEN, "both"),
                ):
                    label = f"{mode}: {name}"
                    print(
                        f"measuring {label}: {a.rounds} rounds of {a.checks // a.rounds} checks idle, then abused ...",
                        flush=True,
                    )
                    abusers = Abusers(servers[mode].port, abuser_token, kind)
                    idle_t: list[float] = []
                    abused_t: list[float] = []
                    blocked = [0, 0]
                    # CPU the server and the abusers burn while abused checks run
                    busy, wall = [0.0, 0.0], 0.0
                    pids = (servers[mode].p.pid, abusers.p.pid)
                    try:
                        for _ in range(a.rounds):
                            for on, into in ((False, idle_t), (True, abused_t)):
                                abusers.switch(on)
                                c0, w0 = [cpu_seconds(p) for p in pids], time.perf_counter()
                                t, b = measure(planner, clients[mode], a.checks // a.rounds)
                                if on:
                                    wall += time.perf_counter() - w0
                                    busy = [x + cpu_seconds(p) - y for x, p, y in zip(busy, pids, c0)]
                                into += t
                                blocked[on] += b
                        abusers.switch(False)
                    finally:
                        note = abusers.stop()
                    note = f"server CPU {busy[0] / wall:.0%}, abusers CPU {busy[1] / wall:.0%}; {note}"
                    rows.append((label, idle_t, abused_t, blocked, note))
                # The MAC's cost on the wire: open and token idle, alternating.
                print("measuring idle checks, open and token alternating check by check ...", flush=True)
                idle: dict[str, list[float]] = {"open": [], "token": []}
                for mode in ("open", "token"):
                    measure(planner, clients[mode], 0)  # warm
                for i in range(2 * a.checks):
                    mode = ("open", "token")[i % 2]
                    idle[mode] += measure(planner, clients[mode], 1, warm=0)[0]
                for c in clients.values():
                    c.close()
            finally:
                for server in servers.values():
                    server.stop()

    cost = mac_cost()
    print()
    print(
        f"{'scenario':<26} {'idle median':>11} {'abused median':>13} {'x':>6} {'idle p99':>9} {'abused p99':>10} "
        f"{'blocked':>8}  abusers got"
    )
    for label, idle_t, abused_t, blocked, note in rows:
        mi, ma = statistics.median(idle_t), statistics.median(abused_t)
        print(
            f"{label:<26} {mi * 1e3:>8.2f} ms {ma * 1e3:>10.2f} ms {ma / mi:>6.2f} {percentile(idle_t, 0.99) * 1e3:>6.2f} ms "
            f"{percentile(abused_t, 0.99) * 1e3:>7.2f} ms {blocked[0]:>3}/{blocked[1]:<4}  {note}"
        )
    print()
    mo, mt = statistics.median(idle["open"]), statistics.median(idle["token"])
    print(
        f"idle check median over {len(idle['open'])} checks each: open {mo * 1e3:.2f} ms, token {mt * 1e3:.2f} ms, "
        f"ratio {mt / mo:.2f}"
    )
    print(
        f"MAC CPU per check (sign + verify the request, seal + verify the answer, 8 keys): {cost * 1e6:.1f} us, "
        f"{cost / mo * 100:.1f}% of the open median"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
