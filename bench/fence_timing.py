"""Engine time of a Planfence check, timed from Python around the engine's
own call (``_core.Lineage.check_local``: frontier walk, encoded queries,
answers from the store, verdict), as test_fence_bench.py and
planfence_experiments.py report it.

The loop runs in Python, so each call also pays the binding's argument and
result conversion (about 0.5 us of a 20 us check, measured against the
C++-side loop this replaced). Best of many short batches: on a shared
machine a long batch is almost always preempted, which measures the load,
not the engine.
"""

from __future__ import annotations

import gc
import time
from typing import Iterable, Optional

from agentsensus import Store


def time_check_local(store: Store, key: str, scope: Optional[Iterable[str]] = None, repeat: int = 200) -> float:
    """Mean nanoseconds of one ``check_local`` call over ``repeat`` calls."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    call = store._handles().lineage.check_local
    sc = None if scope is None else list(scope)
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        for _ in range(repeat):
            call(key, sc)
        return (time.perf_counter_ns() - t0) / repeat
    finally:
        if enabled:
            gc.enable()


def best_check_time_us(store: Store, key: str, batches: int = 50, repeat: int = 200) -> float:
    """The best of ``batches`` batches of ``repeat`` calls, in microseconds."""
    time_check_local(store, key, None, repeat)  # warm
    return min(time_check_local(store, key, None, repeat) for _ in range(batches)) / 1000
