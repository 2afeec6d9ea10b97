"""The crash harness's writer process: a random mix of deposits,
deposit_many rounds, forgets, Planfence publishes and derives, and store
reopens, each journaled as an intent before it runs and an acknowledgement
after it returns (both fsync'd), until it is killed.

Run as ``python workload.py STORE JOURNAL SEED``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import zlib
from typing import Any

import numpy as np

DIM = 16
OWNERS = [f"a{i}" for i in range(5)]
KEYS = [f"k{i}" for i in range(4)]


def vector(text: str) -> np.ndarray:
    """The vector a statement is deposited with: a function of its text, so
    that the verifier can recompute it."""
    v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class Journal:
    """Append-only JSON lines, fsync'd one by one: what the writer did, in
    order, durable before the next step."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, entry: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self._fd)


class Workload:
    """Chooses the next operation from what is live (so forgets name real
    records), runs it, and journals it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.texts: list[str] = []  # every text deposited so far, for exact duplicates
        self.owned: list[tuple[str, int]] = []  # (owner, id) pairs believed live
        self.fact = 0
        self.versions: dict[str, int] = {}

    def _statements(self) -> list[str]:
        out = []
        for _ in range(self.rng.randint(1, 4)):
            if self.texts and self.rng.random() < 0.3:
                out.append(self.rng.choice(self.texts))  # a second witness: merges
            else:
                self.fact += 1
                out.append(f"fact {self.fact} seen by many")
                self.texts.append(out[-1])
        return out

    def next_op(self) -> dict[str, Any]:
        r = self.rng.random()
        if r < 0.40:
            return {"op": "deposit", "owner": self.rng.choice(OWNERS), "statements": self._statements()}
        if r < 0.60:
            items = [[self.rng.choice(OWNERS), self._statements()] for _ in range(self.rng.randint(2, 5))]
            return {"op": "deposit_many", "items": items}
        if r < 0.78 and self.owned:
            owner, rid = self.owned.pop(self.rng.randrange(len(self.owned)))
            return {"op": "forget", "owner": owner, "id": rid}
        if r < 0.92:
            key = self.rng.choice(KEYS)
            return {"op": "publish", "key": key, "value": f"{key} value {self.rng.randrange(10**6)}"}
        if r < 0.97 and self.versions:
            inputs = dict(self.rng.sample(sorted(self.versions.items()), min(2, len(self.versions))))
            return {"op": "derive", "key": "plan", "value": f"plan over {sorted(inputs.items())}", "inputs": inputs}
        return {"op": "reopen"}

    def learn(self, op: dict[str, Any], result: Any) -> None:
        if op["op"] == "deposit":
            self.owned += [(op["owner"], i) for i in set(result)]
        elif op["op"] == "deposit_many":
            for (owner, _), ids in zip(op["items"], result):
                self.owned += [(owner, i) for i in set(ids)]
            self.owned = list(dict.fromkeys(self.owned))
        elif op["op"] == "publish":  # inputs of later derives
            self.versions[op["key"]] = result


def run(store_path: str, journal_path: str, seed: int) -> None:
    from agentsensus import Store

    rng = random.Random(seed)
    journal = Journal(journal_path)
    work = Workload(rng)
    store = Store(store_path, dim=DIM)
    print("ready", flush=True)
    while True:
        op = work.next_op()
        journal.write({"intent": op})
        result: Any = None
        if op["op"] == "deposit":
            st = op["statements"]
            result = store.deposit(op["owner"], st, np.stack([vector(t) for t in st])).ids
        elif op["op"] == "deposit_many":
            items = [(o, st, np.stack([vector(t) for t in st])) for o, st in op["items"]]
            result = [d.ids for d in store.deposit_many(items)]
        elif op["op"] == "forget":
            try:
                store.forget(op["owner"], op["id"])
                result = True
            except KeyError:  # already gone with its record: a no-op
                result = False
        elif op["op"] == "publish":
            result = store.fence.publish(op["key"], "owner-" + op["key"], op["value"])
        elif op["op"] == "derive":
            result = store.fence.derive(op["key"], "planner", op["value"], op["inputs"])
        else:  # close (saving the index) and open again
            store.close()
            store = Store(store_path)
        journal.write({"ack": result})
        work.learn(op, result)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], int(sys.argv[3]))
