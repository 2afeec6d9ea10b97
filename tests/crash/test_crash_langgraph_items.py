"""A LangGraph put is one transaction: a child process putting and deleting
items is SIGKILLed at a random moment, and after reopening, every item and
the records it points at agree (verify's I15), every acknowledged put is
there (or the put in flight replaced it), and no record is left that no
item uses (a record only its namespace held goes in the put's own
transaction)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from agentsensus import Store, embedders
from agentsensus.integrations.langgraph import ConsensusStore

pytestmark = pytest.mark.slow  # writer processes killed mid-operation

EMBED = embedders.HashEmbedder(32)
NS = ("agent", "hamlet")
KEYS = 6

_CHILD = """
import json, os, sys
sys.path[:0] = {path!r}
from agentsensus import embedders
from agentsensus.integrations.langgraph import ConsensusStore
lg = ConsensusStore({store!r}, index={{"embed": embedders.HashEmbedder(32), "fields": ["text"]}})
journal = open({journal!r}, "a")
for i in range(5000):  # bounded: the parent kills it long before
    key = f"k{{i % {keys}}}"
    value = None if i % 7 == 6 else {{"text": f"statement {{i}} about the ghost in round {{i // 3}}", "i": i}}
    journal.write(json.dumps({{"start": i, "key": key, "value": value}}) + "\\n")
    journal.flush()
    if value is None:
        lg.delete({ns!r}, key)
    else:
        lg.put({ns!r}, key, value)
    journal.write(json.dumps({{"ack": i}}) + "\\n")
    journal.flush()
    os.fsync(journal.fileno())
"""


def _journal(path: str) -> tuple[list[dict], set[int]]:
    starts, acks = [], set()
    with open(path) as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the kill
            if "start" in row:
                starts.append(row)
            else:
                acks.add(row["ack"])
    return starts, acks


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_put_killed_anywhere_leaves_items_and_records_agreeing(tmp_path, seed):
    rng = random.Random(seed)
    store, journal = os.fspath(tmp_path / "store"), os.fspath(tmp_path / "journal")
    code = _CHILD.format(path=sys.path, store=store, journal=journal, keys=KEYS, ns=NS)
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        want = rng.randint(3, 25)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if os.path.exists(journal) and len(_journal(journal)[1]) >= want:
                break
            time.sleep(0.01)
        time.sleep(rng.random() * 0.05)  # land anywhere in the next put
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    starts, acks = _journal(journal)
    assert len(acks) >= want, "the writer did not get far enough"

    with Store(store) as s:
        assert s.verify() == []
    with ConsensusStore(store, index={"embed": EMBED, "fields": ["text"]}) as lg:
        last_acked: dict[str, dict] = {}
        in_flight = None
        for row in starts:
            if row["start"] in acks:
                last_acked[row["key"]] = row
            else:
                in_flight = row  # at most one: the writer is sequential
        for n in range(KEYS):
            key = f"k{n}"
            item = lg.get(NS, key)
            allowed = [last_acked[key]["value"] if key in last_acked else None]
            if in_flight is not None and in_flight["key"] == key:
                allowed.append(in_flight["value"])
            assert (item.value if item else None) in allowed, (key, item, allowed)
            row = lg.items.get(NS, key)
            if row is not None:  # its text's record is there, owned for its namespace
                (ref,) = row.refs
                assert ref[0] == "agent.hamlet" and lg.store.get(ref[1]).text == row.value["text"]
        used = {r for key in (f"k{n}" for n in range(KEYS)) for _, r in (lg.items.get(NS, key) or _NoRow).refs}
        unused = set(lg.store.owned("agent.hamlet")) - used
        # Every record here is one namespace's alone: an item's old record goes
        # in the transaction of the put that lets go of it, so none is left.
        assert unused == set(), unused


class _NoRow:
    refs: tuple = ()
