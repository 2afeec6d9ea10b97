"""One crash trial: start the writer, let it run for a random time, SIGKILL
it, reopen the store and check it against the writer's journal. Shared by
the short tests (tests/crash) and the soak (bench/crash_soak.py)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class TrialResult:
    seed: int
    kill_after: int  # acknowledged operations the trial waited for before its kill
    acknowledged: int  # operations the journal acknowledged (all verified)
    in_flight: bool  # an operation was running when the kill came


def _acks(journal_path: str) -> int:
    try:
        with open(journal_path, "rb") as f:
            return f.read().count(b'{"ack"')
    except FileNotFoundError:
        return 0


def run_trial(workdir: str, seed: int, max_ops: int = 150) -> TrialResult:
    """Runs the writer in a fresh store under workdir until it has
    acknowledged a random number (1..max_ops) of operations, lets it go on
    for a random moment (so the kill lands anywhere in an operation), kills
    it, and verifies."""
    import oracle
    from agentsensus import Store

    rng = random.Random(seed)
    kill_after = rng.randint(1, max_ops)
    store_path = os.path.join(workdir, "store")
    journal_path = os.path.join(workdir, "journal.jsonl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, *sys.path])}
    child = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "workload.py"), store_path, journal_path, str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert child.stdout is not None
        ready = child.stdout.readline()
        assert ready.strip() == b"ready", f"writer did not start: {ready!r}"
        while _acks(journal_path) < kill_after:
            if child.poll() is not None:
                raise AssertionError(f"the writer died by itself: {child.stderr.read().decode()[-2000:]}")
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.02))
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    with Store(store_path) as store:
        acked = oracle.check(store, journal_path)
    _, pending = oracle.read_journal(journal_path)
    return TrialResult(seed, kill_after, acked, pending is not None)
