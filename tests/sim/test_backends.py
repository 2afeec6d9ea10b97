"""The three baseline backends' protocol behaviour."""

from __future__ import annotations

import numpy as np
from agentsensus.sim.backend import MemoryBackend
from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.g_memory import GMemoryBackend
from agentsensus.sim.generative_agents import GenerativeAgentsBackend, default_importance


def item(embed, owner: str, *texts: str):  # type: ignore[no-untyped-def]
    return (owner, list(texts), embed(list(texts)))


def test_all_baselines_speak_the_protocol(embed) -> None:  # type: ignore[no-untyped-def]
    for b in (
        GenerativeAgentsBackend(embed, embed.dim),
        GMemoryBackend(embed, embed.dim),
        CollaborativeBackend(embed.dim),
    ):
        assert isinstance(b, MemoryBackend)
        b.remember([item(embed, "Hamlet", "The ghost walks tonight upon the platform.")], 1)
        hits = b.recall("Hamlet", embed(["ghost platform"])[0], k=3)
        assert hits and hits[0].via == "hit" and hits[0].owners == frozenset({"Hamlet"})
        assert b.recall("Nobody", embed(["ghost"])[0]) == []
        st = b.stats()
        assert {"records", "shared", "three_plus", "max_owners", "linked"} <= set(st)
        assert st["shared"] == 0
        b.close()


def test_generative_agents_streams_are_private(embed) -> None:  # type: ignore[no-untyped-def]
    b = GenerativeAgentsBackend(embed, embed.dim)
    same = 'Hamlet told us: "The king drinks deep tonight."'
    b.remember([item(embed, "Horatio", same), item(embed, "Marcellus", same)], 1)
    assert b.stats()["records"] == 2  # one row per witness: nothing merges
    for owner in ("Horatio", "Marcellus"):
        assert {m.owners for m in b.recall(owner, embed([same])[0])} == {frozenset({owner})}


def test_generative_agents_score_combines_recency_importance_relevance(embed) -> None:  # type: ignore[no-untyped-def]
    b = GenerativeAgentsBackend(embed, embed.dim, reflection_threshold=1e9)
    b.remember([item(embed, "Hamlet", "A quiet morning with bread and cheese.")], 1)
    b.remember([item(embed, "Hamlet", "Murder most foul, the ghost cried of poison and death!")], 2)
    b.remember([item(embed, "Hamlet", "The bread was stale this morning again.")], 30)
    top = b.recall("Hamlet", embed(["bread this morning"])[0], k=1)[0]
    assert "bread" in top.text
    assert default_importance("Murder most foul, poison and death!") > default_importance("bread and cheese")
    # Weights of (0, 1, 0): importance alone decides.
    b.weights = (0.0, 1.0, 0.0)
    assert "Murder" in b.recall("Hamlet", embed(["bread this morning"])[0], k=1)[0].text


def test_generative_agents_reflect_and_cite_evidence(embed) -> None:  # type: ignore[no-untyped-def]
    calls = []

    def reflect(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return [("Reflection: the ghost matters.", [0, 1])]

    b = GenerativeAgentsBackend(embed, embed.dim, importance=lambda t: 5.0, reflect=reflect, reflection_threshold=10.0)
    b.remember([item(embed, "Hamlet", "The ghost appeared at midnight.", "The ghost spoke of murder.")], 1)
    assert len(calls) == 1 and b.stats()["reflections"] == 1
    st = b.stats()
    # The reflection points at its two evidence rows: pointers, not affiliation between statements.
    assert st["records"] == 3 and st["pointed"] == 3 and st["linked"] == 0
    b.remember([item(embed, "Hamlet", "A third thing happened here.")], 2)
    assert len(calls) == 1  # the importance sum restarted after reflecting


def test_g_memory_insights_point_back_and_recall_expands(embed) -> None:  # type: ignore[no-untyped-def]
    b = GMemoryBackend(embed, embed.dim, insight_every=3)
    b.remember([item(embed, "Hamlet", "The ghost walks tonight.", "The king drinks deep tonight.")], 1)
    assert b.stats()["insights"] == 0
    b.remember(
        [item(embed, "Hamlet", "Horatio swears silence on the sword."), item(embed, "Horatio", "The night is cold.")], 2
    )
    st = b.stats()
    assert st["insights"] == 1 and st["records"] == 5
    insight = [i for i, t in b.texts.items() if t.startswith("Insight")][0]
    assert len(b.adjacency[insight]) == 3
    assert st["linked"] == 0 and st["pointed"] == 4  # Hamlet's chain, rows and insight: pointers, no affiliation
    got = b.recall("Hamlet", embed(["ghost walks tonight"])[0], k=1)
    assert got[0].via == "hit" and any(m.via == "edge" for m in got)
    assert all(m.owners == frozenset({"Hamlet"}) for m in got)
    assert len({m.id for m in got}) == len(got)  # no repeats


def test_collaborative_grants_reads_to_the_witnesses_of_each_statement(embed) -> None:  # type: ignore[no-untyped-def]
    b = CollaborativeBackend(embed.dim)
    same = "The ghost walks upon the platform tonight."
    saw = frozenset({"Hamlet", "Horatio"})
    b.remember(
        [
            item(embed, "Hamlet", same, "A letter came from sea."),
            item(embed, "Horatio", same),
            item(embed, "Osric", "Elsewhere, at sea."),
        ],
        1,
        witnesses=[[saw, frozenset({"Hamlet", "Osric"})], [saw], [frozenset({"Osric"})]],
    )
    st = b.stats()
    assert st["records"] == 4 and st["shared"] == 0 and st["granted_rows"] == 3 and st["max_readers"] == 2
    got = b.recall("Horatio", embed([same])[0], k=5)
    assert sorted(next(iter(m.owners)) for m in got) == ["Hamlet", "Horatio"]  # its own row and the granted one
    assert "A letter came from sea." not in {m.text for m in got}  # Horatio did not witness the letter
    assert "A letter came from sea." in {m.text for m in b.recall("Osric", embed(["letter sea"])[0])}


def test_recall_k_is_respected(embed) -> None:  # type: ignore[no-untyped-def]
    texts = [f"Statement number {i} about the castle walls." for i in range(20)]
    for b in (GenerativeAgentsBackend(embed, embed.dim), CollaborativeBackend(embed.dim)):
        b.remember([item(embed, "Hamlet", *texts)], 1)
        assert len(b.recall("Hamlet", embed(["castle"])[0], k=4)) == 4
    assert np.isfinite([m.score for m in b.recall("Hamlet", embed(["castle"])[0], k=4)]).all()
