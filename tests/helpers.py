"""Test helpers: deterministic vectors, judges and store snapshots."""

from __future__ import annotations

import re
import threading
from typing import Callable, Optional, TypeVar

import numpy as np
from agentsensus import JudgeRequest, Store

DIM = 16
T = TypeVar("T")


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    """A deterministic random unit vector."""
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def near(v: np.ndarray, seed: int, eps: float = 0.05) -> np.ndarray:
    """A unit vector close to v (cosine about 1 - eps**2 * dim / 2)."""
    w = v + eps * np.random.default_rng(seed).standard_normal(v.shape[0]).astype(np.float32)
    return (w / np.linalg.norm(w)).astype(np.float32)


class RecordingJudge:
    """Answers from a table statement -> candidate text, records its calls."""

    def __init__(self, same: Optional[Callable[[str, str], bool]] = None) -> None:
        self.calls: list[list[JudgeRequest]] = []
        self.same = same or (lambda a, b: False)

    def __call__(self, requests: list[JudgeRequest]) -> list[Optional[int]]:
        self.calls.append(list(requests))
        out: list[Optional[int]] = []
        for r in requests:
            out.append(next((c.id for c in r.candidates if self.same(r.statement, c.text)), None))
        return out


def snapshot(s: Store) -> tuple:
    """Everything observable about a store, for all-or-nothing checks."""
    st = s.stats()
    recs = []
    for owner in ("a", "b", "c", "alice", "bob", "carol"):
        recs.append((owner, tuple(s.owned(owner))))
    return (st, tuple(recs), tuple(s.merges()))


def in_threads(n: int, work: Callable[[int], T], timeout: float = 120) -> list[T]:
    """work(0), ..., work(n - 1) on n threads released together by a barrier;
    their results in that order. Fails when a thread raised or has not
    finished within timeout seconds."""
    results: list = [None] * n
    errors: list[BaseException] = []
    gate = threading.Barrier(n)

    def run(t: int) -> None:
        try:
            gate.wait(timeout=30)
            results[t] = work(t)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=timeout)
    assert not any(th.is_alive() for th in threads), "a thread did not finish"
    assert not errors, errors
    return results


# Statements of the property tests name their event: "... event 12 ...".
EVENT = re.compile(r"event (\d+)")


def truth_judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
    """Merges a statement into a candidate of the same event."""
    out: list[Optional[int]] = []
    for r in requests:
        m = EVENT.search(r.statement)
        e = m.group(1) if m else None
        out.append(next((c.id for c in r.candidates if (cm := EVENT.search(c.text)) and cm.group(1) == e), None))
    return out
