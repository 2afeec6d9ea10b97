"""The consensus backend over the engine (``agentsensus.Store``).

No skip: these need the compiled engine and fail without it.
"""

from __future__ import annotations

from agentsensus.sim.collaborative import CollaborativeBackend
from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.g_memory import GMemoryBackend
from agentsensus.sim.generative_agents import GenerativeAgentsBackend


def test_witnesses_of_one_speech_share_one_record(tmp_path, embed) -> None:  # type: ignore[no-untyped-def]
    b = ConsensusBackend(tmp_path / "store", embed.dim)
    speech = "The ghost walks upon the platform tonight."
    items = [
        ("Hamlet", [f'In scene 1, I told Horatio: "{speech}"', "In scene 1, Hamlet entered the platform."]),
        ("Horatio", [f'In scene 1, Hamlet told me: "{speech}"']),
    ]
    stored = b.remember([(o, s, embed(s)) for o, s in items], 1)
    assert [m for _, m in stored] == [[False, False], [True]] and stored[1][0][0] == stored[0][0][0]
    st = b.stats()
    assert st["records"] == 2 and st["shared"] == 1 and st["max_owners"] == 2 and st["linked"] == 2
    got = b.recall("Horatio", embed([speech])[0], k=5)
    assert len(got) == 1 and got[0].owners == frozenset({"Hamlet", "Horatio"})  # the edge row is Hamlet's alone
    assert {m.via for m in b.recall("Hamlet", embed([speech])[0], k=1)} == {"hit", "edge"}
    g = b.graph()
    assert len(g.owners) == 2 and len(g.edges) == 1 and set(g.rounds.values()) == {1}
    assert [m.owner for m in b.merge_log()] == ["Horatio"]
    b.close()
    b.close()


def test_merging_off_shares_nothing_and_fork_copies(tmp_path, embed) -> None:  # type: ignore[no-untyped-def]
    b = ConsensusBackend(tmp_path / "off", embed.dim, merging=False)
    speech = 'In scene 1, Hamlet told us: "The ghost walks upon the platform tonight."'
    stored = b.remember([(o, [speech], embed([speech])) for o in ("Horatio", "Marcellus")], 1)
    assert stored[0][0] != stored[1][0]  # ids of the per-agent stores never collide
    st = b.stats()
    assert st["records"] == 2 and st["shared"] == 0
    assert b.recall("Marcellus", embed([speech])[0])[0].owners == frozenset({"Marcellus"})
    twin = b.fork(tmp_path / "twin")
    twin.remember(
        [("Horatio", ["In round 2, Horatio entered the hall."], embed(["In round 2, Horatio entered the hall."]))], 2
    )
    assert twin.records() == 3 and b.records() == 2
    assert twin.text_of(stored[0][0][0]) == speech
    b.close()
    twin.close()


def test_consensus_is_smallest_and_shares_on_the_tiny_play(tiny_play, embed, run_kernel, tmp_path) -> None:  # type: ignore[no-untyped-def]
    cons = run_kernel(tiny_play, ConsensusBackend(tmp_path / "c", embed.dim), embed)
    st = cons.backend.stats()
    assert st["shared"] > 0 and st["linked"] > 0 and cons.backend.judge.calls > 0
    for other in (
        GenerativeAgentsBackend(embed, embed.dim),
        GMemoryBackend(embed, embed.dim),
        CollaborativeBackend(embed.dim),
    ):
        k = run_kernel(tiny_play, other, embed)
        assert st["records"] < k.backend.stats()["records"]
        assert k.backend.stats()["shared"] == 0 and k.backend.stats()["linked"] == 0
    # Recall never shows an agent a record it does not own.
    for agent in tiny_play.cast:
        for m in cons.backend.recall(agent, embed(["the ghost"])[0], k=5):
            assert agent in m.owners
    cons.backend.close()


class _OneByOne:
    """The wrapped backend without recall_many: the kernel recalls one by one."""

    def __init__(self, backend) -> None:  # type: ignore[no-untyped-def]
        self.inner = backend
        self.name = backend.name

    def remember(self, items, round, witnesses=None):  # type: ignore[no-untyped-def]
        return self.inner.remember(items, round, witnesses=witnesses)

    def recall(self, owner, query, k=5):  # type: ignore[no-untyped-def]
        return self.inner.recall(owner, query, k)

    def stats(self):  # type: ignore[no-untyped-def]
        return self.inner.stats()

    def graph(self):  # type: ignore[no-untyped-def]
        return self.inner.graph()

    def __getattr__(self, name):  # type: ignore[no-untyped-def]
        if name == "recall_many":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_round_recalled_in_one_batch_runs_as_one_by_one(tiny_play, embed, run_kernel, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The kernel hands a round's recalls to recall_many; the run (every
    # recall call, what it returned, what followed) is the one-by-one run.
    batched = run_kernel(tiny_play, ConsensusBackend(tmp_path / "b", embed.dim), embed)
    single = run_kernel(tiny_play, _OneByOne(ConsensusBackend(tmp_path / "s", embed.dim)), embed)
    assert any(log.recalls > 1 for log in batched.logs)  # a round recalled several agents at once
    assert [log.recall_calls for log in batched.logs] == [log.recall_calls for log in single.logs]
    assert [(log.recalls, log.hits, log.edge_rows) for log in batched.logs] == [
        (log.recalls, log.hits, log.edge_rows) for log in single.logs
    ]
    assert batched.backend.stats() == single.backend.stats()
    batched.backend.close()
    single.backend.close()


def test_consensus_recall_many_is_recall_per_owner(tmp_path, embed) -> None:  # type: ignore[no-untyped-def]
    for merging in (True, False):
        b = ConsensusBackend(tmp_path / f"m{merging}", embed.dim, merging=merging)
        lines = ["The ghost walks.", "The king is dead.", "Ophelia sings.", "The ghost walks tonight."]
        b.remember([(o, [s], embed([s])) for o, s in zip(["Hamlet", "Horatio", "Hamlet", "Ophelia"], lines)], 1)
        queries = [(o, embed([q])[0]) for o in ("Hamlet", "Horatio", "Ophelia", "Nobody") for q in ("ghost", "king")]
        assert b.recall_many(queries, k=2) == [b.recall(o, q, k=2) for o, q in queries]
        b.close()
