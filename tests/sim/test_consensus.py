"""The consensus backend over the engine (``agentsensus.Store``).

No skip: these need the compiled engine and fail without it.
"""

from __future__ import annotations

from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.g_memory import GMemoryBackend
from agentsensus.sim.generative_agents import GenerativeAgentsBackend
from agentsensus.sim.judge import ContentJudge
from agentsensus.sim.runner import run


def test_witnesses_of_one_speech_share_one_record(tmp_path, embed) -> None:  # type: ignore[no-untyped-def]
    b = ConsensusBackend(tmp_path / "store", embed.dim)
    speech = "The ghost walks upon the platform tonight."
    items = [("Hamlet", [f'I told Horatio: "{speech}"', "I entered the platform."], None),
             ("Horatio", [f'Hamlet told me: "{speech}"'], None)]
    b.remember([(o, s, embed(s)) for o, s, _ in items], 1)
    st = b.stats()
    assert st["records"] == 2 and st["shared"] == 1 and st["max_owners"] == 2 and st["linked"] == 2
    got = b.recall("Horatio", embed([speech])[0], k=5)
    assert len(got) == 1 and got[0].owners == frozenset({"Hamlet", "Horatio"})  # the edge row is Hamlet's alone
    via = {m.via for m in b.recall("Hamlet", embed([speech])[0], k=1)}
    assert via == {"hit", "edge"}
    g = b.graph()
    assert len(g.owners) == 2 and len(g.edges) == 1
    assert [m.owner for m in b.merge_log()] == ["Horatio"]
    b.close()
    b.close()


def test_merging_off_shares_nothing(tmp_path, embed) -> None:  # type: ignore[no-untyped-def]
    b = ConsensusBackend(tmp_path / "off", embed.dim, merging=False)
    speech = 'Hamlet told us: "The ghost walks upon the platform tonight."'
    b.remember([(o, [speech], embed([speech])) for o in ("Horatio", "Marcellus")], 1)
    st = b.stats()
    assert st["records"] == 2 and st["shared"] == 0
    assert b.recall("Marcellus", embed([speech])[0])[0].owners == frozenset({"Marcellus"})
    assert len(b.graph().owners) == 2
    b.close()


def test_consensus_is_smallest_and_shares_on_the_tiny_play(tiny_play, embed, run_kernel, tmp_path) -> None:  # type: ignore[no-untyped-def]
    judge = ContentJudge()
    cons = run_kernel(tiny_play, ConsensusBackend(tmp_path / "c", embed.dim, judge=judge), embed)
    st = cons.backend.stats()
    assert st["shared"] > 0 and st["linked"] > 0 and judge.calls > 0
    for other in (GenerativeAgentsBackend(embed, embed.dim), GMemoryBackend(embed, embed.dim), CollaborativeBackend(embed.dim)):
        k = run_kernel(tiny_play, other, embed)
        assert st["records"] < k.backend.stats()["records"]
        assert k.backend.stats()["shared"] == 0
    # Recall never shows an agent a record it does not own.
    for agent in tiny_play.cast:
        for m in cons.backend.recall(agent, embed(["the ghost"])[0], k=5):
            assert agent in m.owners
    cons.backend.close()


def test_full_run_with_all_backends(tmp_path, tiny_file) -> None:  # type: ignore[no-untyped-def]
    m = run(world=str(tiny_file), rounds=12, out=tmp_path, progress=False)
    b = m["backends"]
    assert list(b) == ["consensus", "generative_agents", "g_memory", "collaborative"]
    assert all(b["consensus"]["total"] < b[o]["total"] for o in b if o != "consensus")
    assert b["consensus"]["shared"] > 0 and b["consensus"]["linked"] > 0
    assert all(b[o]["shared"] == 0 for o in b if o != "consensus")
    ab = m["ablation"]
    assert ab["merging_off"]["shared"] == 0 and ab["growth_factor"] > 1
    assert ab["merging_on"]["total"] == b["consensus"]["total"]
    assert "10" in m["horizon"]["consensus"]
    html = (tmp_path / "report.html").read_text()
    assert "Records shared by each pair of agents" in html and "merging off" in html
