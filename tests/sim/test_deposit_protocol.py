"""After round 0 an agent deposits only the results of its own actions, and
the controls show which figures recall and merging make.

The protocol (``sim/kernel.py``): a speaker, a doer and a mover deposit what
they said or did; ``read_thread`` and ``observe`` deposit what they returned
to their reader; a bystander deposits nothing. So two agents share a record
made after round 0 only when each deposited an equivalent statement from an
action of its own: ``OUT/events.jsonl`` against ``OUT/store`` shows it.
"""

from __future__ import annotations

import json

import pytest
from agentsensus import Store
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.controls import NoMergeBackend, RecallOff
from agentsensus.sim.play import parse_play
from agentsensus.sim.runner import run
from agentsensus.sim.simulate_cli import cli_main

pytestmark = pytest.mark.slow  # a simulation run per module


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory, tiny_text):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("kept")
    src = out / "tiny.md"
    src.write_text(tiny_text, encoding="utf-8")
    code = cli_main(["--world", str(src), "--rounds", "30", "--quick", "--keep-store", "--out", str(out), "--quiet"])
    assert code == 0
    return out


def test_every_owner_of_a_new_record_deposited_it_through_an_action_of_its_own(kept_run) -> None:  # type: ignore[no-untyped-def]
    lines = [json.loads(x) for x in (kept_run / "events.jsonl").read_text().splitlines()]
    assert lines and {"round", "agent", "action", "backend", "deposited"} <= set(lines[0])
    mine = [x for x in lines if x["backend"] == "consensus"]
    by_record: dict[int, set[str]] = {}
    for x in mine:
        for rid in x["deposited"]:
            by_record.setdefault(rid, set()).add(x["agent"])
    with Store(str(kept_run / "store"), create=False, readonly=True) as store:
        new = [store.get(rid) for rid in sorted(by_record) if store.get(rid).round >= 1]
        assert new and any(len(m.owners) >= 2 for m in new)  # something is shared
        for m in new:
            assert set(m.owners) <= by_record[m.id], (m.id, m.text)
        # No record made after round 0 is owned by someone who did not deposit into it.
        for owner in {x["agent"] for x in mine}:
            for rid in store.owned(owner):
                if store.get(rid).round >= 1:
                    assert owner in by_record.get(int(rid), set()), (owner, rid)
    # Only a reading action deposits what others said or did; observe and read deposit nothing of their own doing.
    kinds = {x["action"] for x in mine if x["deposited"]}
    assert kinds <= {"say", "act_on", "move", "read_thread", "observe"}
    assert all(not x["deposited"] for x in mine if x["action"] == "ponder")


def test_a_bystander_who_takes_no_reading_action_deposits_nothing(tiny_play, embed, run_kernel, tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = ConsensusBackend(tmp_path / "c", embed.dim)
    try:
        k = run_kernel(tiny_play, backend, embed, rounds=12)
        for log in k.logs[1:]:
            for d in log.acted:
                if d.action not in ("say", "act_on", "move", "read_thread", "observe"):
                    assert d.deposited == ()
            doers = {a for ev in log.events for a in ev.actors}
            for d in log.acted:
                if d.deposited and d.action in ("say", "act_on", "move"):
                    assert d.agent in doers  # its own doing
            # Every witness of a say who neither spoke nor read nor observed deposited nothing that round.
            readers = {d.agent for d in log.acted if d.action in ("read_thread", "observe")}
            deposited = {d.agent for d in log.acted if d.deposited}
            bystanders = {w for ev in log.events for w in ev.witnesses} - doers - readers
            assert not bystanders & deposited
    finally:
        backend.close()


def test_controls_recall_off_changes_the_story_and_merge_off_shares_nothing(tiny_text, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "tiny.md"
    src.write_text(tiny_text, encoding="utf-8")
    m = run(world=str(src), rounds=30, backends=["consensus"], out=None, progress=False, cache_rows=False, horizon=())
    main = m["backends"]["consensus"]
    off, nomerge = m["controls"]["recall_off"]["consensus"], m["controls"]["merge_off"]["consensus"]
    for row in (off, nomerge):
        assert {"sim", "sim_shared_pct", "actions"} <= set(row)
    assert (off["actions"], off["sim"]) != (main["actions"], main["sim"])  # memory changes what happens
    assert off["says"]["forms"].get("retelling", 0) == 0 < main["says"]["forms"].get("retelling", 0)
    assert nomerge["sim_shared_pct"] == 0 and nomerge["sim"] > main["sim"]
    assert m["ablation"]["merging_off"]["sim"] == nomerge["sim"]


def test_the_merge_off_store_keeps_identical_text_apart(embed) -> None:  # type: ignore[no-untyped-def]
    b = NoMergeBackend(embed.dim)
    text = "The ghost walks upon the platform tonight."
    got = b.remember([("Hamlet", [text, text], embed([text, text])), ("Horatio", [text], embed([text]))], 1)
    assert [ids for ids, _ in got] == [[1, 2], [3]] and all(not any(m) for _, m in got)
    assert b.stats()["records"] == 3 and b.stats()["shared"] == 0
    hits = b.recall("Hamlet", embed([text])[0], k=1)
    assert [(h.id, h.via) for h in hits] == [(1, "hit"), (2, "edge")]  # one hop along the deposit's edge
    assert {h.owners for h in b.recall("Horatio", embed([text])[0], k=5)} == {frozenset({"Horatio"})}


def test_recall_off_returns_nothing_and_stores_as_the_store_does(embed) -> None:  # type: ignore[no-untyped-def]
    inner = NoMergeBackend(embed.dim)
    b = RecallOff(inner)
    b.remember([("Hamlet", ["A letter came from sea."], embed(["A letter came from sea."]))], 1)
    assert b.recall("Hamlet", embed(["letter"])[0]) == [] and inner.recall("Hamlet", embed(["letter"])[0])
    assert b.records() == 1 and b.name == inner.name


def test_collaborative_reads_go_to_the_witnesses_not_to_where_people_stand_at_the_end(tiny_text) -> None:  # type: ignore[no-untyped-def]
    # The Ghost witnessed Horatio's charge, then left: it may read Horatio's account of it. Whoever
    # stands where Horatio is at the end of the play, and did not see it, may not.
    from agentsensus.sim.kernel import Kernel
    from agentsensus.sim.memory_policy import MemoryPolicy
    from agentsensus.sim.sediment import replay_source
    from agentsensus.sim.sim_embedder import get_embedder
    from agentsensus.sim.world import World

    play = parse_play(tiny_text)
    embed = get_embedder("hash")
    world = World.of(play.title, play.cast, play.places)
    replay = replay_source(play, world)
    replay.place_survivors(world)
    b = CollaborativeBackend(embed.dim)
    Kernel(world, MemoryPolicy(0), b, embed).sediment(replay.batches)
    charge = [i for i, t in enumerate(b.texts) if "charge" in t and b.writers[i] == "Horatio"]
    assert charge
    for i in charge:
        ev = next(e for e in world.events if "charge" in e.text)
        assert b.readers[i] == {"Horatio"} | set(ev.witnesses)
