"""What running the store on Ray costs, against its peers measured in the
same run (medians of repeated calls; docs/scale.md quotes the output).

  python bench/ray_bench.py calls     # actor call cost: a no-op, recall, a (100, 384) argument
  python bench/ray_bench.py check     # a Planfence check over 4 owners: Ray actors, HTTP, local
  python bench/ray_bench.py reopen --records 100000
                                      # reopen after SIGKILL with and without a checkpoint
  python bench/ray_bench.py nodekill  # recovery after the store actor's node is killed
  python bench/ray_bench.py rounds    # round wall time on 1, 2, 4 nodes against the ideal
  python bench/ray_bench.py shards    # judge wall time per round, one store against place shards

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
    from agentsensus.planfence.transport import HeadsClient, HeadsServer
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


# ---------------------------------------------------------------- nodekill

#: Ray's health checks tuned so a dead node is noticed in about 1.5 s (defaults: 3 s x 5 failures).
TUNED_HEALTH = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 3,
}


def bench_nodekill(args: argparse.Namespace) -> None:
    """Kills the store actor's node between two keyed rounds, starts a
    replacement node with the same resource at once, and times from the kill
    to the first round the restarted actor acknowledges."""
    import ray
    from agentsensus import judges
    from agentsensus.ray import RemoteStore, StoreActor, local_cluster, node_resource, on_node
    from agentsensus.ray.loopback import LOOPBACK

    dim = 64
    config = None if args.default_health else TUNED_HEALTH
    base = tempfile.mkdtemp(prefix="ray-bench-kill-")
    try:
        with local_cluster([{}, {node_resource("disk"): 1}], system_config=config) as cluster:
            actor = StoreActor.options(**on_node("disk"), max_restarts=args.trials + 1).remote(
                os.path.join(base, "s"), dim=dim, judge=judges.exact, checkpoint_every=5
            )
            store = RemoteStore(actor, retry_for=300)
            vecs = unit_rows(64 * (args.trials + 1) * 4, dim, 3)
            n = [0]

            def round_() -> None:
                items = [(f"a{i}", [f"fact {n[0]}-{i}"], vecs[n[0] * 64 + i : n[0] * 64 + i + 1]) for i in range(64)]
                store.deposit_many(items, round=n[0], batch_key=f"round-{n[0]}")
                n[0] += 1

            round_()
            times, starts = [], []
            for _ in range(args.trials):
                node_id = ray.get(actor.info.remote())["node"]
                victim = next(x for x in cluster.list_all_nodes() if x.node_id == node_id)
                t = time.perf_counter()
                cluster.remove_node(victim, allow_graceful=False)
                t_add = time.perf_counter()
                cluster.add_node(
                    node_ip_address=LOOPBACK,
                    num_cpus=1,
                    object_store_memory=100 << 20,
                    resources={node_resource("disk"): 1},
                )
                starts.append(time.perf_counter() - t_add)
                round_()
                times.append(time.perf_counter() - t)
                print(
                    f"  recovered in {times[-1]:.2f} s (starting the replacement node took {starts[-1]:.2f} s)",
                    flush=True,
                )
            st = store.stats()
            assert st.deposits == 64 * n[0] and store.verify() == [], st
            store.shutdown()
        which = "Ray's default health checks" if args.default_health else "tuned health checks (0.5 s x 3)"
        print(
            f"\nnode kill -> first acknowledged round on the restarted actor, {which}, "
            f"median of {args.trials}: {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}); "
            f"of it, starting the replacement node (add_node, in this thread): {statistics.median(starts):.2f} s"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- rounds


class Observe:
    """A policy that observes: the decision's cost is the simulated model call alone."""

    def __call__(self) -> "Observe":
        return self

    def decide(self, agent: str, view: Any) -> Any:
        from agentsensus.sim.actions import Action

        return Action("observe", agent)


def bench_rounds(args: argparse.Namespace) -> None:
    """Round wall time of AGENTS agents whose decisions each wait LATENCY
    seconds (a simulated model call), at most CAP at a time per node, on
    1, 2 and 4 nodes of a local cluster; against the ideal
    ceil(agents / (cap * nodes)) * latency. Each round is what the Ray
    simulation does: one recall_many, the decisions in one agent group per
    node, one keyed deposit_many."""
    import math

    import ray
    from agentsensus.ray import RemoteStore, StoreActor, local_cluster
    from agentsensus.sim.agent_policy import AgentView
    from agentsensus.sim.ray_runner import _group_class
    from agentsensus.sim.stm import ShortTermMemory

    dim, agents = 64, args.agents
    vecs = unit_rows(agents * (args.rounds + 1), dim, 4)
    rows = []
    for nodes in args.nodes:
        base = tempfile.mkdtemp(prefix="ray-bench-rounds-")
        try:
            with local_cluster([{} for _ in range(nodes)]):
                store = RemoteStore(StoreActor.remote(os.path.join(base, "s"), dim=dim))
                Group = _group_class()
                groups = [Group.remote(args.cap, args.latency) for _ in range(nodes)]
                placed = set(ray.get([g.node.remote() for g in groups]))
                ray.get([g.adopt.remote("bench", Observe()) for g in groups])
                times = []
                for r in range(args.rounds + 1):  # the first round warms up
                    t = time.perf_counter()
                    names = [f"agent{i}" for i in range(agents)]
                    found = store.recall_many([(a, vecs[i]) for i, a in enumerate(names)], k=5)
                    views = [
                        (a, AgentView(a, r, "hall", [], ShortTermMemory(), [m.text for m in f]))
                        for a, f in zip(names, found)
                    ]
                    refs = [g.decide_many.remote("bench", views[i :: len(groups)]) for i, g in enumerate(groups)]
                    ray.get(refs)
                    items = [
                        (a, [f"{a} in round {r}"], vecs[agents * r + i : agents * r + i + 1])
                        for i, a in enumerate(names)
                    ]
                    store.deposit_many(items, round=r, batch_key=f"round-{r}")
                    if r:
                        times.append(time.perf_counter() - t)
                ideal = math.ceil(agents / (args.cap * nodes)) * args.latency
                rows.append((nodes, len(placed), statistics.median(times), ideal))
                print(f"  {nodes} node(s): median round {rows[-1][2]:.2f} s (ideal {ideal:.2f} s)", flush=True)
                for g in groups:
                    ray.kill(g, no_restart=True)
                store.shutdown()
        finally:
            shutil.rmtree(base, ignore_errors=True)
    print(
        f"\n{agents} agents, {args.latency} s a decision, at most {args.cap} at once per node, median of {args.rounds} rounds:"
    )
    for nodes, placed, med, ideal in rows:
        print(
            f"  {nodes} node(s) ({placed} holding groups): {med:6.2f} s a round, ideal {ideal:5.2f} s ({med / ideal:4.2f}x)"
        )


# ---------------------------------------------------------------- shards

PLACES = [f"place{i}" for i in range(16)]


def shard_world(seed: int, rounds: int, cross: float) -> list[list[tuple[str, str, list[str], np.ndarray]]]:
    """Rounds of (place, witness, statements, vectors): 8 witnesses at each of
    16 places report events of their place; with probability ``cross`` an
    event is also reported, in the same words, by a witness of another place."""
    rng = np.random.default_rng(seed)
    dim = 64
    out = []
    for r in range(rounds):
        batch = []
        for p in range(len(PLACES)):
            events = [(p, r, e) for e in range(2)]
            for w in range(8):
                e = events[int(rng.integers(2))]
                v = unit_rows(1, dim, 10_000 * e[0] + 100 * e[1] + e[2])
                batch.append((PLACES[p], f"w{p}-{w}", [f"at {PLACES[e[0]]} in round {e[1]}: event {e[2]}"], v))
                if rng.random() < cross:
                    q = (p + 1 + int(rng.integers(len(PLACES) - 1))) % len(PLACES)
                    batch.append((PLACES[q], f"w{q}-{w}", [f"at {PLACES[e[0]]} in round {e[1]}: event {e[2]}"], v))
        out.append(batch)
    return out


class SlowJudge:
    """Merges a statement into a candidate with the same text, after JUDGE_S seconds a call (a model call)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, requests: list[Any]) -> list[Any]:
        time.sleep(self.seconds)
        return [next((c.id for c in r.candidates if c.text == r.statement), None) for r in requests]


def bench_shards(args: argparse.Namespace) -> None:
    """Judge wall time per round, one StoreActor against K place shards, with
    a judge that takes JUDGE_S a call, the judge asked in passes (the
    default) and once per item; and records and merges of both on a world
    where no event crosses places and on one where some do."""
    from agentsensus.ray import RemoteStore, ShardedStore, StoreActor, local_cluster

    dim = 64
    print(
        f"{len(PLACES)} places x 8 witnesses, {args.rounds} rounds, a judge of {args.judge_s * 1000:.0f} ms a call, "
        f"{args.shards} shards; medians over the rounds after the first",
        flush=True,
    )
    with local_cluster([{}], num_cpus=2):
        for cross in (0.0, args.cross):
            for per_item in (False, True):
                base = tempfile.mkdtemp(prefix="ray-bench-shards-")
                try:
                    world = shard_world(7, args.rounds + 1, cross)
                    opts = dict(dim=dim, judge=SlowJudge(args.judge_s), min_similarity=0.5)
                    one = RemoteStore(StoreActor.remote(os.path.join(base, "one"), **opts))
                    actors = [StoreActor.remote(os.path.join(base, f"s{i}"), **opts) for i in range(args.shards)]
                    sharded = ShardedStore(actors)
                    t_one, t_sh = [], []
                    for r, batch in enumerate(world):
                        items = [(w, texts, v) for _, w, texts, v in batch]
                        t = time.perf_counter()
                        one.deposit_many(items, round=r, judge_per_item=per_item)
                        t_one.append(time.perf_counter() - t)
                        t = time.perf_counter()
                        sharded.deposit_many(items, places=[p for p, *_ in batch], round=r, judge_per_item=per_item)
                        t_sh.append(time.perf_counter() - t)
                    s1, s2 = one.stats(), sharded.stats()
                    world_name = (
                        f"{cross:.0%} of reports also from another place" if cross else "no event crosses places"
                    )
                    mode = "judge per item" if per_item else "judge in passes"
                    m1, m2 = statistics.median(t_one[1:]), statistics.median(t_sh[1:])
                    print(
                        f"  {world_name}, {mode}: one store {m1:6.3f} s a round ({s1.records} records, "
                        f"{s1.merges} merges) | sharded {m2:6.3f} s ({s2.records} records, {s2.merges} merges) "
                        f"| {m1 / m2:4.1f}x",
                        flush=True,
                    )
                    one.shutdown()
                    for a in actors:
                        RemoteStore(a).shutdown()
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
    kill = sub.add_parser("nodekill")
    kill.add_argument("--trials", type=int, default=3)
    kill.add_argument("--default-health", action="store_true", help="Ray's default health checks")
    rr = sub.add_parser("rounds")
    rr.add_argument("--agents", type=int, default=64)
    rr.add_argument("--latency", type=float, default=1.5)
    rr.add_argument("--cap", type=int, default=8)
    rr.add_argument("--rounds", type=int, default=3)
    rr.add_argument("--nodes", type=lambda t: [int(x) for x in t.split(",")], default=[1, 2, 4])
    sh = sub.add_parser("shards")
    sh.add_argument("--rounds", type=int, default=4)
    sh.add_argument("--shards", type=int, default=8)
    sh.add_argument("--judge-s", type=float, default=0.05)
    sh.add_argument("--cross", type=float, default=0.2)
    args = ap.parse_args()
    {
        "calls": bench_calls,
        "check": bench_check,
        "reopen": bench_reopen,
        "nodekill": bench_nodekill,
        "rounds": bench_rounds,
        "shards": bench_shards,
    }[args.what](args)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()
