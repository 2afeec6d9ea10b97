"""What running the store on Ray costs, against its peers measured in the
same run (medians of repeated calls; docs/scale.md quotes the output).

  python bench/ray_bench.py calls     # actor call cost: a no-op, recall, a (100, 384) argument
  python bench/ray_bench.py check     # a Planfence check over 4 owners: Ray actors, HTTP, local
  python bench/ray_bench.py reopen --records 100000
                                      # reopen after SIGKILL with and without a checkpoint

The cluster is agentsensus.ray.local_cluster: 127.0.0.1 only, token
authentication on, 1 CPU and 100 MB of object store per node. Runs against
the installed package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, Callable

import numpy as np


def median_ms(fn: Callable[[], Any], n: int) -> float:
    fn()  # warm
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# ---------------------------------------------------------------- calls


def bench_calls(args: argparse.Namespace) -> None:
    import ray
    from agentsensus import Store
    from agentsensus.ray import RemoteStore, StoreActor, local_cluster, node_resource, on_node

    dim, n = 384, args.repeat
    base = tempfile.mkdtemp(prefix="ray-bench-")
    try:
        t = time.perf_counter()
        with local_cluster([{node_resource("head"): 1}, {node_resource("other"): 1}]):
            print(f"2-node local cluster up in {time.perf_counter() - t:.1f} s", flush=True)
            vecs = unit_rows(args.records, dim, 1)
            items = [(f"o{i % 20}", [f"fact {i}"], vecs[i : i + 1]) for i in range(len(vecs))]
            local = Store(os.path.join(base, "local"), dim=dim)
            local.deposit_many(items)
            rows = []
            for where in ("head", "other"):
                actor = StoreActor.options(**on_node(where)).remote(os.path.join(base, where), dim=dim)
                r = RemoteStore(actor)
                r.deposit_many(items)
                q = vecs[7]
                big = unit_rows(100, dim, 2)
                rows.append((f"no-op actor call ({where} node)", median_ms(lambda: ray.get(actor.info.remote()), n)))
                rows.append((f"recall k=5 through the actor ({where} node)", median_ms(lambda: r.recall("o7", q), n)))
                texts = [f"batch statement {i}" for i in range(100)]
                rows.append(
                    (
                        f"deposit of 100 statements, (100, {dim}) f32 ({where} node)",
                        median_ms(lambda: r.deposit("bench", texts, big), max(5, n // 10)),
                    )
                )
                r.shutdown()
            q = vecs[7]
            rows.append(("recall k=5 on a local Store", median_ms(lambda: local.recall("o7", q), n)))
            rows.append(
                (
                    f"deposit of 100 statements, (100, {dim}) f32, local Store",
                    median_ms(
                        lambda: local.deposit(
                            "bench", [f"batch statement {i}" for i in range(100)], unit_rows(100, dim, 2)
                        ),
                        max(5, n // 10),
                    ),
                )
            )
            local.close()
        print(f"\nmedian of {n} calls ({args.records} records, dim {dim}):")
        for name, ms in rows:
            print(f"  {name:<62} {ms:8.3f} ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- check


OWNERS = {"alice": ["req", "scope"], "bob": ["budget"], "carol": ["site"], "dave": ["crew"]}


def bench_check(args: argparse.Namespace) -> None:
    from agentsensus import Store
    from agentsensus.heads_transport import HeadsClient, HeadsServer
    from agentsensus.ray import RayHeadsClient, RemoteStore, StoreActor, local_cluster, owner_actor_name

    n = args.repeat
    base = tempfile.mkdtemp(prefix="ray-bench-")
    token = os.urandom(32).hex()
    try:
        with local_cluster([{}]):
            local_owners = {o: Store(os.path.join(base, "local-" + o), dim=4) for o in OWNERS}
            remote_owners = {
                o: RemoteStore(
                    StoreActor.options(name=owner_actor_name(o)).remote(os.path.join(base, "ray-" + o), dim=4)
                )
                for o in OWNERS
            }
            for o, keys in OWNERS.items():
                for k in keys:
                    local_owners[o].fence.publish(k, o, f"{k} v1")
                    remote_owners[o].fence.publish(k, o, f"{k} v1")
            servers = [HeadsServer(local_owners[o], o, token=token).start() for o in OWNERS]
            planner = Store(os.path.join(base, "planner"), dim=4)
            f = planner.fence
            for o, keys in OWNERS.items():
                for k in keys:
                    f.observe(k, o, 1, f"{k} v1")
            f.derive("plan", "planner", "the plan", {k: 1 for keys in OWNERS.values() for k in keys})

            class InProcess:
                """The owners' stores in this process, asked through the encoding."""

                def ask_encoded(self, queries: dict[str, bytes]) -> dict[str, bytes]:
                    return {o: local_owners[o].fence.answer(o, q) for o, q in queries.items()}

            ray_client = RayHeadsClient.named(OWNERS)
            with HeadsClient({o: s.url for o, s in zip(OWNERS, servers)}, token=token, timeout=5) as http:
                peers = [
                    ("in-process owners (encoded, no transport)", InProcess()),
                    ("HTTP (aiohttp, token MAC)", http),
                    ("Ray actor calls", ray_client),
                ]
                rows = []
                for name, heads in peers:
                    c = f.check("plan", heads=heads)
                    assert c.current and c.owners_asked == 4, (name, c)
                    rows.append((name, median_ms(lambda: f.check("plan", heads=heads), n)))
            for s in servers:
                s.stop()
            for r in remote_owners.values():
                r.shutdown()
            for s in local_owners.values():
                s.close()
            planner.close()
        base_ms = rows[0][1]
        print(f"\na check of one plan over 4 owners, median of {n}:")
        for name, ms in rows:
            print(f"  {name:<46} {ms:8.3f} ms  ({ms / base_ms:5.1f}x in-process)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- reopen

# argv: path, mode, [records dim]. Modes:
#   build: create, close (an index file at journal 0), reopen, deposit records, SIGKILL
#   open-checkpoint-kill: open (timed), checkpoint, SIGKILL
#   open-close: open (timed), close
# Prints one JSON line before it dies: open and first-recall seconds.
_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, time
    import numpy as np
    from agentsensus import Store
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "build":
        n, dim = int(sys.argv[3]), int(sys.argv[4])
        Store(path, dim=dim).close()
        s = Store(path, dim=dim, sync=False)
        rng = np.random.default_rng(5)
        done = 0
        while done < n:
            m = min(1000, n - done)
            v = rng.standard_normal((m, dim)).astype(np.float32)
            s.deposit_many([(f"o{(done + i) % 100}", [f"record {done + i}"], v[i:i + 1]) for i in range(m)])
            done += m
            print(json.dumps({"built": done}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    t = time.perf_counter()
    s = Store(path)
    opened = time.perf_counter() - t
    q = np.ones(s.dim, np.float32)
    t = time.perf_counter()
    s.recall("o3", q, k=5)
    s.deposit("late", ["one more"], q[None, :])  # a change loads a mapped index
    first = time.perf_counter() - t
    print(json.dumps({"open": opened, "first": first, "records": s.stats().records}), flush=True)
    if mode == "open-checkpoint-kill":
        s.checkpoint()
        os.kill(os.getpid(), signal.SIGKILL)
    s.close()
    """
)


def child(*argv: str) -> dict[str, Any]:
    p = subprocess.Popen([sys.executable, "-c", _CHILD, *argv], stdout=subprocess.PIPE, text=True)
    last: dict[str, Any] = {}
    assert p.stdout is not None
    for line in p.stdout:
        last = json.loads(line)
        if "built" in last and last["built"] % 20000 == 0:
            print(f"  built {last['built']} records", flush=True)
    p.wait(timeout=3600)
    return last


def bench_reopen(args: argparse.Namespace) -> None:
    base = tempfile.mkdtemp(prefix="ray-bench-reopen-")
    try:
        built = os.path.join(base, "built")
        t = time.perf_counter()
        child(built, "build", str(args.records), str(args.dim))
        print(
            f"built {args.records} records (dim {args.dim}) and killed the writer in {time.perf_counter() - t:.0f} s",
            flush=True,
        )
        rows: dict[str, list[dict[str, Any]]] = {"no checkpoint": [], "checkpoint": [], "clean close": []}
        for _ in range(args.trials):
            path = os.path.join(base, "trial")
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(built, path)
            rows["no checkpoint"].append(child(path, "open-checkpoint-kill"))  # replays the whole journal
            rows["checkpoint"].append(child(path, "open-close"))  # from the checkpoint, then a clean close
            rows["clean close"].append(child(path, "open-close"))
        print(f"\nreopen after SIGKILL, {args.records} records, dim {args.dim}, median of {args.trials}:")
        ref = statistics.median(r["open"] for r in rows["checkpoint"])
        for name, rs in rows.items():
            o = statistics.median(r["open"] for r in rs)
            f = statistics.median(r["first"] for r in rs)
            print(
                f"  {name:<14} open {o * 1000:9.1f} ms   first recall + deposit {f * 1000:8.1f} ms   ({o / ref:6.1f}x checkpoint)"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("calls")
    c.add_argument("--repeat", type=int, default=200)
    c.add_argument("--records", type=int, default=2000)
    k = sub.add_parser("check")
    k.add_argument("--repeat", type=int, default=200)
    r = sub.add_parser("reopen")
    r.add_argument("--records", type=int, default=100_000)
    r.add_argument("--dim", type=int, default=384)
    r.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    {"calls": bench_calls, "check": bench_check, "reopen": bench_reopen}[args.what](args)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
