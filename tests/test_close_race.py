"""close() racing every public call: close waits for the calls in flight and
refuses later ones (cpp/include/agentsensus/store_handle.hpp), never a crash.

Each call kind runs in its own child process, so a crash is seen as a crash
(a signal exit), not as a failed assertion. In each trial one thread repeats
the call on an open store while the main thread closes it after a random
pause; every call must either complete or raise the "store is closed" Error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # races of threads and processes, repeated

TRIALS = 20
KINDS = [
    "deposit",
    "deposit_many",
    "recall",
    "get",
    "owned",
    "neighbors",
    "records",
    "merges",
    "stats",
    "verify",
    "forget",
    "fence_check",
    "fence_publish",
    "fence_frontier",
    "export",
]


@pytest.mark.parametrize("kind", KINDS)
def test_close_racing_a_call_never_crashes(kind, tmp_path):
    r = subprocess.run(
        [sys.executable, os.path.abspath(__file__), os.fspath(tmp_path / "store"), kind, str(TRIALS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"child exited with {r.returncode}:\n{r.stderr[-3000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["bad"] == [], out["bad"][:5]
    # Every trial ran the call at least once before close and ended on the
    # refusal after it.
    assert out["completed"] >= TRIALS and out["closed"] == TRIALS


# -- the child -----------------------------------------------------------------


def _child(path: str, kind: str, trials: int) -> dict[str, object]:
    import io
    import random
    import threading

    import agentsensus
    import numpy as np
    from agentsensus import Store
    from agentsensus.io.export import export_jsonl

    dim = 8
    rng = np.random.default_rng(7)

    def vec(n: int = 1) -> np.ndarray:
        v = rng.standard_normal((n, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    with Store(path, dim=dim, sync=False) as s:
        for i in range(40):
            s.deposit(f"agent{i % 4}", [f"fact {i}"], vec())
        s.deposit("agent1", ["fact 3"], vec())  # an exact duplicate: one merge
        for j in range(12):
            s.fence.publish(f"in/{j}", f"owner{j % 3}", f"v{j}")
        s.fence.derive("plan", "planner", "p", {f"in/{j}": 1 for j in range(12)})
    q = vec()[0]
    counter = [0]

    def call(s: Store) -> None:
        counter[0] += 1
        n = counter[0]
        if kind == "deposit":
            s.deposit("racer", [f"racing {n}"], vec())
        elif kind == "deposit_many":
            s.deposit_many([("racer", [f"many {n} a", f"many {n} b"], vec(2)), ("other", [f"many {n} c"], vec())])
        elif kind == "recall":
            s.recall("agent1", q, k=5)
        elif kind == "get":
            s.get(1 + n % 40)
        elif kind == "owned":
            s.owned("agent2")
        elif kind == "neighbors":
            s.neighbors(1 + n % 40)
        elif kind == "records":
            list(s.records())
        elif kind == "merges":
            list(s.merges())
        elif kind == "stats":
            s.stats()
        elif kind == "verify":
            s.verify()
        elif kind == "forget":
            d = s.deposit("zed", [f"to forget {n}"], vec())
            s.forget("zed", d.ids[0])
        elif kind == "fence_check":
            s.fence.check("plan")
        elif kind == "fence_publish":
            s.fence.publish(f"in/{n % 12}", f"owner{n % 12 % 3}", f"v{n}")
        elif kind == "fence_frontier":
            s.fence.frontier("plan")
        elif kind == "export":
            export_jsonl(s, io.StringIO())
        else:
            raise ValueError(kind)

    completed = closed = 0
    bad: list[str] = []
    for trial in range(trials):
        s = Store(path, sync=False)
        started = threading.Event()
        result: dict[str, object] = {}

        def worker() -> None:
            done = 0
            for _ in range(100_000):  # bounded: ends on the refusal after close
                try:
                    call(s)
                except agentsensus.Error as e:
                    msg = str(e)
                    if "is closed" in msg and "store" in msg:
                        result["closed"] = True
                    else:
                        result["bad"] = f"{type(e).__name__}: {msg}"
                    break
                except Exception as e:  # anything else is a defect
                    result["bad"] = f"{type(e).__name__}: {e}"
                    break
                done += 1
                started.set()
            result["done"] = done
            started.set()

        t = threading.Thread(target=worker)
        t.start()
        started.wait(60)
        # A pause of 0 to 2 ms: close lands at a different point of the call.
        threading.Event().wait(random.Random(trial).uniform(0, 0.002))
        s.close()
        t.join(60)
        if t.is_alive():
            bad.append(f"trial {trial}: the call did not return after close")
            continue
        completed += int(result.get("done", 0))  # type: ignore[call-overload]
        if "bad" in result:
            bad.append(f"trial {trial}: {result['bad']}")
        elif result.get("closed"):
            closed += 1
        else:
            bad.append(f"trial {trial}: the call kept running after close")
    # What the completed calls wrote is all there and sound.
    with Store(path) as s:
        problems = s.verify()
    bad.extend(f"verify: {p}" for p in problems)
    return {"completed": completed, "closed": closed, "bad": bad}


if __name__ == "__main__":
    import faulthandler

    faulthandler.enable()  # a crash prints where it happened
    print(json.dumps(_child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
