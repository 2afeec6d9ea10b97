"""Fuzz target: the public API with hostile arguments.

Each input is a sequence of calls (deposit, deposit_many, recall, get,
neighbors, owned, forget, Planfence publish/derive/head/check, reopen) whose
arguments come from the input: arbitrary Unicode (lone surrogates, NUL),
oversized strings, odd types, NaN/inf/zero and wrongly shaped vectors, huge
and negative ids. Each call must succeed or raise a documented error
(ValueError, TypeError, KeyError, agentsensus.Error); the store must stay
sound (verify() == []) after every input. Anything else is a finding.

    pip install atheris==3.0.0
    PYTHONPATH=python python fuzz/fuzz_api.py -max_total_time=600 fuzz/corpus_api
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

import atheris

with atheris.instrument_imports(include=["agentsensus"]):
    import numpy as np
    from agentsensus import Error, Store

DIM = 4
PATH = os.path.join(tempfile.mkdtemp(prefix="fuzz-api-"), "store")
EXPECTED = (ValueError, TypeError, KeyError, Error)
store = Store(PATH, dim=DIM)


def text(fdp: atheris.FuzzedDataProvider) -> Any:
    pick = fdp.ConsumeIntInRange(0, 9)
    if pick == 0:
        return fdp.ConsumeBytes(8)  # bytes, not str
    if pick == 1:
        return fdp.ConsumeInt(4)
    if pick == 2:
        return "x" * fdp.ConsumeIntInRange(60_000, 70_000)  # around the statement limit
    if pick == 3:
        return "k" * fdp.ConsumeIntInRange(250, 600)  # around the owner and key limits
    return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 24))


def vectors(fdp: atheris.FuzzedDataProvider, n: int) -> Any:
    pick = fdp.ConsumeIntInRange(0, 7)
    if pick == 0:
        return None
    if pick == 1:
        return [[fdp.ConsumeFloat() for _ in range(DIM)] for _ in range(n)]  # NaN, inf, huge
    if pick == 2:
        return np.zeros((n, DIM), np.float32)
    if pick == 3:
        return np.ones((n, fdp.ConsumeIntInRange(0, 6)), np.float32)
    if pick == 4:
        return np.ones((n, DIM), np.int64)
    if pick == 5:
        return "not a vector"
    rng = np.random.default_rng(fdp.ConsumeIntInRange(0, 1000))
    return rng.standard_normal((n, DIM)).astype(np.float32)


def statements(fdp: atheris.FuzzedDataProvider) -> Any:
    if fdp.ConsumeIntInRange(0, 9) == 0:
        return text(fdp)  # a single str or something else
    return [text(fdp) for _ in range(fdp.ConsumeIntInRange(0, 4))]


def ident(fdp: atheris.FuzzedDataProvider) -> Any:
    pick = fdp.ConsumeIntInRange(0, 4)
    if pick == 0:
        return fdp.ConsumeInt(9)  # huge and negative
    if pick == 1:
        return str(fdp.ConsumeIntInRange(0, 9))
    ids = store.owned("a") + store.owned("b")
    return ids[fdp.ConsumeIntInRange(0, len(ids) - 1)] if ids else 1


def one_call(fdp: atheris.FuzzedDataProvider) -> None:
    global store
    op = fdp.ConsumeIntInRange(0, 11)
    owner = fdp.PickValueInList(["a", "b"]) if fdp.ConsumeBool() else text(fdp)
    if op == 0:
        st = statements(fdp)
        n = len(st) if isinstance(st, list) else 1
        store.deposit(owner, st, vectors(fdp, n), round=fdp.ConsumeIntInRange(-1, 5))
    elif op == 1:
        items = []
        for _ in range(fdp.ConsumeIntInRange(0, 3)):
            st = statements(fdp)
            items.append((owner, st, vectors(fdp, len(st) if isinstance(st, list) else 1)))
        store.deposit_many(items)
    elif op == 2:
        q = vectors(fdp, 1)
        store.recall(
            owner,
            q[0] if isinstance(q, (list, np.ndarray)) and len(q) else q,
            k=fdp.ConsumeIntInRange(-1, 50),
            expand=fdp.ConsumeBool(),
        )
    elif op == 3:
        store.get(ident(fdp))
    elif op == 4:
        store.neighbors(ident(fdp))
    elif op == 5:
        store.owned(owner)
    elif op == 6:
        store.forget(owner, ident(fdp))
    elif op == 7:
        store.fence.publish(text(fdp), owner, text(fdp))
    elif op == 8:
        keys = store.fence.keys()
        inputs = {k: fdp.ConsumeIntInRange(-1, 3) for k in keys[: fdp.ConsumeIntInRange(0, 3)]}
        if fdp.ConsumeBool():
            inputs[text(fdp)] = 1
        store.fence.derive(text(fdp), owner, text(fdp), inputs)
    elif op == 9:
        key = text(fdp)
        store.fence.head(key)
    elif op == 10:
        keys = store.fence.keys()
        if keys:
            store.fence.check(
                keys[fdp.ConsumeIntInRange(0, len(keys) - 1)], scope=[text(fdp)] if fdp.ConsumeBool() else None
            )
    else:
        store.close()
        store = Store(PATH)


def TestOneInput(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    for _ in range(fdp.ConsumeIntInRange(1, 6)):
        try:
            one_call(fdp)
        except EXPECTED:
            pass
    problems = store.verify()
    if problems:
        raise AssertionError(f"store unsound after {data!r}: {problems[:3]}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
