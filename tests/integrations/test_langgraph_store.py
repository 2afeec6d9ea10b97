"""``ConsensusStore`` against the real LangGraph package."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Iterator, TypedDict

import numpy as np
import pytest
from agentsensus import Store, embedders
from agentsensus.integrations.langgraph import ConsensusStore
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

GHOST = "The ghost walks on the platform at midnight"
HAMLET = ("memories", "hamlet")
HORATIO = ("memories", "horatio")


@pytest.fixture
def lg(tmp_path: Any) -> Iterator[ConsensusStore]:
    s = ConsensusStore(os.fspath(tmp_path / "store"), index={"embed": embedders.hash, "fields": ["text"]})
    yield s
    s.close()


def test_is_a_langgraph_base_store(lg: ConsensusStore) -> None:
    assert isinstance(lg, BaseStore)
    assert lg.store.dim == 384  # taken from the embedder's .dim
    assert lg.owner_of(HAMLET) == "memories.hamlet"


def test_put_get_update_delete(lg: ConsensusStore) -> None:
    lg.put(HAMLET, "ghost", {"text": GHOST, "mood": "afraid"})
    first = lg.get(HAMLET, "ghost")
    assert first is not None and first.value == {"text": GHOST, "mood": "afraid"}
    assert (first.namespace, first.key) == (HAMLET, "ghost")
    assert lg.get(HORATIO, "ghost") is None
    (record,) = lg.store.owned("memories.hamlet")
    assert lg.store.get(record).text == GHOST

    lg.put(HAMLET, "ghost", {"text": "The ghost spoke of murder", "mood": "angry"})
    second = lg.get(HAMLET, "ghost")
    assert second is not None and second.value["mood"] == "angry"
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    # The old text's record is no longer used by any item of this owner: forgotten.
    assert [lg.store.get(i).text for i in lg.store.owned("memories.hamlet")] == ["The ghost spoke of murder"]

    lg.delete(HAMLET, "ghost")
    assert lg.get(HAMLET, "ghost") is None
    assert lg.store.owned("memories.hamlet") == []


def test_namespaces_that_hold_the_same_fact_share_one_record(lg: ConsensusStore) -> None:
    lg.put(HAMLET, "a", {"text": GHOST, "by": "hamlet"})
    lg.put(HORATIO, "b", {"text": GHOST, "by": "horatio"})
    st = lg.store.stats()
    assert (st.records, st.shared, st.max_owners) == (1, 1, 2)
    # Each namespace still finds only its own item, with its own value.
    (h,) = lg.search(HAMLET, query="ghost at midnight")
    assert (h.namespace, h.key, h.value["by"]) == (HAMLET, "a", "hamlet")
    hits = lg.search(("memories",), query="ghost at midnight")
    assert sorted((i.namespace, i.key) for i in hits) == [(HAMLET, "a"), (HORATIO, "b")]
    # Hamlet deleting his item leaves Horatio's record in place.
    lg.delete(HAMLET, "a")
    (rid,) = lg.store.owned("memories.horatio")
    assert lg.store.get(rid).owners == {"memories.horatio"}
    assert [i.key for i in lg.search(("memories",), query="ghost")] == ["b"]


def test_semantic_search_ranks_and_pages(lg: ConsensusStore) -> None:
    texts = {
        "ghost": GHOST,
        "king": "The king drinks deep tonight",
        "poison": "Poison poured in the sleeping king's ear",
        "skull": "Alas poor Yorick the jester's skull",
    }
    for key, text in texts.items():
        lg.put(HAMLET, key, {"text": text})
    hits = lg.search(HAMLET, query="the king drinks")
    assert hits[0].key == "king" and len(hits) == 4
    scores = [h.score for h in hits]
    assert all(s is not None for s in scores) and scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert [h.key for h in lg.search(HAMLET, query="the king drinks", limit=2, offset=1)] == [h.key for h in hits[1:3]]
    assert lg.search(HAMLET, query="the king drinks", limit=0) == []


def test_filters_with_and_without_query(lg: ConsensusStore) -> None:
    for n in range(6):
        lg.put(HAMLET, f"k{n}", {"text": f"Scene {n} of the play", "act": n % 3, "tags": {"loud": n > 3}})
    assert sorted(i.key for i in lg.search(HAMLET, filter={"act": 1})) == ["k1", "k4"]
    assert sorted(i.key for i in lg.search(HAMLET, filter={"act": {"$gte": 2}})) == ["k2", "k5"]
    assert sorted(i.key for i in lg.search(HAMLET, filter={"tags": {"loud": True}})) == ["k4", "k5"]
    assert sorted(i.key for i in lg.search(HAMLET, filter={"act": {"$ne": 0}, "tags": {"loud": False}})) == ["k1", "k2"]
    hits = lg.search(HAMLET, query="scene 4 of the play", filter={"act": 1}, limit=1)
    assert [h.key for h in hits] == ["k4"] and hits[0].score is not None
    assert len(lg.search(HAMLET, limit=4)) == 4
    assert lg.search(HAMLET, filter={"act": 7}) == []


def test_index_override_and_unindexed_items(lg: ConsensusStore) -> None:
    lg.put(HAMLET, "titled", {"title": "The Mousetrap", "text": "ignored"}, index=["title"])
    lg.put(HAMLET, "plain", {"text": "Nothing to index here"}, index=False)
    lg.put(HAMLET, "many", {"lines": ["To be", "or not to be"]}, index=["lines[*]"])
    texts = sorted(lg.store.get(i).text for i in lg.store.owned("memories.hamlet"))
    assert texts == ["The Mousetrap", "To be", "or not to be"]
    hits = lg.search(HAMLET, query="mousetrap", limit=5)
    assert hits[0].key == "titled"
    assert hits[-1].key == "plain" and hits[-1].score is None  # unindexed items fill the page, unscored
    # The texts of one item are joined by an affiliation edge.
    ids = [i for i in lg.store.owned("memories.hamlet") if lg.store.get(i).text != "The Mousetrap"]
    assert lg.store.neighbors(ids[0]) == [ids[1]]


def test_list_namespaces(lg: ConsensusStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]:
        lg.put(ns, "k", {"text": "x " + "/".join(ns)})
    assert lg.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert lg.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lg.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]


def test_batch_reads_before_writes_and_last_put_wins(lg: ConsensusStore) -> None:
    lg.put(HAMLET, "k", {"text": "old"})
    out = lg.batch(
        [
            PutOp(HAMLET, "k", {"text": "first"}),
            GetOp(HAMLET, "k"),
            PutOp(HAMLET, "k", {"text": "second"}),
            SearchOp(HAMLET, query="old"),
            ListNamespacesOp(),
        ]
    )
    assert out[0] is None and out[2] is None
    assert out[1] is not None and out[1].value == {"text": "old"}  # type: ignore[union-attr]
    assert [i.value["text"] for i in out[3]] == ["old"]  # type: ignore[union-attr]
    assert out[4] == [HAMLET]
    got = lg.get(HAMLET, "k")
    assert got is not None and got.value == {"text": "second"}
    assert [lg.store.get(i).text for i in lg.store.owned("memories.hamlet")] == ["second"]


def test_invalid_namespaces_are_refused(lg: ConsensusStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        lg.put(("a.b",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError):
        lg.batch([PutOp((), "k", {"text": "x"})])
    with pytest.raises(InvalidNamespaceError):
        lg.batch([GetOp(("a", ""), "k")])


def test_async_api_with_an_async_embedder(tmp_path: Any) -> None:
    calls: list[int] = []

    async def aembed(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return embedders.hash(texts).tolist()  # type: ignore[no-any-return]

    async def run(lg: ConsensusStore) -> list[Any]:
        await lg.aput(HAMLET, "g", {"text": GHOST})
        await lg.aput(HORATIO, "g", {"text": GHOST})
        got = await lg.aget(HORATIO, "g")
        hits = await lg.asearch(("memories",), query="ghost")
        names = await lg.alist_namespaces(prefix=("memories",))
        await lg.adelete(HAMLET, "g")
        return [got, hits, names]

    with ConsensusStore(os.fspath(tmp_path / "s"), index={"dims": 384, "embed": aembed, "fields": ["text"]}) as lg:
        got, hits, names = asyncio.run(run(lg))
        assert got.value == {"text": GHOST}
        assert len(hits) == 2 and names == [HAMLET, HORATIO]
        assert lg.store.stats().merges == 1 and lg.get(HAMLET, "g") is None
    assert calls  # the async embedder did the work


def test_items_persist_across_reopen(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with ConsensusStore(path, index={"embed": embedders.hash, "fields": ["text"]}) as lg:
        lg.put(HAMLET, "g", {"text": GHOST, "n": 1})
    with ConsensusStore(path, index={"embed": embedders.hash, "fields": ["text"]}) as lg:
        got = lg.get(HAMLET, "g")
        assert got is not None and got.value == {"text": GHOST, "n": 1}
        assert [h.key for h in lg.search(HAMLET, query="ghost")] == ["g"]


def test_an_open_store_and_a_custom_owner_mapping(tmp_path: Any) -> None:
    with Store(os.fspath(tmp_path / "s"), dim=384) as store:
        lg = ConsensusStore(store, index={"dims": 384, "embed": embedders.hash}, owner=lambda ns: ns[-1])
        lg.put(("users", "ann"), "pref", {"color": "green"})
        assert lg.owner_of(("users", "ann")) == "ann"
        (rid,) = store.owned("ann")
        assert store.get(rid).text == '{"color": "green"}'  # fields default to "$": the whole value
        lg.close()
        assert not store.closed  # the caller's store stays open
        with pytest.raises(ValueError):
            ConsensusStore(store, index={"dims": 8, "embed": embedders.hash})


def test_a_plain_key_value_store_without_index(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    with ConsensusStore(path) as lg:  # no index, no dim: LangGraph's plain key-value store
        lg.put(HAMLET, "k", {"text": GHOST})
        assert lg.search(HAMLET, query="ghost")[0].score is None
        assert lg.store.stats().records == 0
        assert lg.store.dim == embedders.hash.dim
    with ConsensusStore(path) as lg:  # reopened as it was
        got = lg.get(HAMLET, "k")
        assert got is not None and got.value == {"text": GHOST}
    # The default dim lets the default embedder index the same store later.
    with ConsensusStore(path, index={"embed": embedders.hash, "fields": ["text"]}) as lg:
        lg.put(HAMLET, "j", {"text": GHOST})
        assert [h.key for h in lg.search(HAMLET, query="ghost")][0] == "j"


@pytest.mark.parametrize(
    "index, message",
    [
        ({"embed": embedders.hash, "distance_type": "hamming"}, "distance_type must be one of"),
        ({"embed": embedders.hash, "ann_index_config": {"kind": "hnsw"}}, "not supported by ConsensusStore"),
        ({"embed": embedders.hash, "text_fields": ["a"]}, "not supported by ConsensusStore"),
        ({"dims": 384}, "index needs 'embed'"),
        ({"dims": 8, "embed": embedders.hash}, "does not match the embedder's dim=384"),
    ],
)
def test_index_options_it_cannot_honour_are_refused(tmp_path: Any, index: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message) as e:
        ConsensusStore(os.fspath(tmp_path / "s"), index=index)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "s").exists()  # refused before anything is written


@pytest.mark.parametrize("distance, metric", [("cosine", "cos"), ("inner_product", "ip"), ("l2", "l2sq")])
def test_distance_type_sets_the_metric_and_scores_as_langgraph(tmp_path: Any, distance: str, metric: str) -> None:
    index: Any = {"embed": embedders.hash, "fields": ["text"], "distance_type": distance}
    with ConsensusStore(os.fspath(tmp_path / "s"), index=index) as lg:
        assert lg.store.metric == metric
        lg.put(HAMLET, "ghost", {"text": GHOST})
        lg.put(HAMLET, "king", {"text": "The king drinks deep tonight"})
        hits = lg.search(HAMLET, query=GHOST)
        assert [h.key for h in hits] == ["ghost", "king"]
        q, far = embedders.hash([GHOST])[0], embedders.hash(["The king drinks deep tonight"])[0]
        # LangGraph's Postgres store scores: cosine similarity, the dot product, minus the L2 distance.
        expected = {"cosine": float(q @ far), "inner_product": float(q @ far), "l2": -float(np.linalg.norm(q - far))}
        assert hits[1].score == pytest.approx(expected[distance], abs=1e-5)
        assert hits[0].score == pytest.approx(0.0 if distance == "l2" else 1.0, abs=1e-5)
    # An existing store keeps its metric: another distance_type is refused.
    other = "cosine" if distance != "cosine" else "l2"
    with pytest.raises(ValueError):
        ConsensusStore(os.fspath(tmp_path / "s"), index={**index, "distance_type": other})
    with Store(os.fspath(tmp_path / "s")) as store, pytest.raises(ValueError, match="needs metric"):
        ConsensusStore(store, index={**index, "distance_type": other})


class State(TypedDict):
    agent: str
    said: str
    recalled: list[str]


def test_inside_a_langgraph_graph(lg: ConsensusStore) -> None:
    def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        runtime.store.put(("memories", state["agent"]), str(len(state["said"])), {"text": state["said"]})
        return {}

    def recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        hits = runtime.store.search(("memories", state["agent"]), query="ghost", limit=3)
        return {"recalled": [h.value["text"] for h in hits]}

    g = StateGraph(State)
    g.add_node("remember", remember)
    g.add_node("recall", recall)
    g.add_edge(START, "remember")
    g.add_edge("remember", "recall")
    g.add_edge("recall", END)
    graph = g.compile(store=lg)
    a = graph.invoke({"agent": "hamlet", "said": GHOST, "recalled": []})
    b = graph.invoke({"agent": "horatio", "said": GHOST, "recalled": []})
    assert a["recalled"] == [GHOST] and b["recalled"] == [GHOST]
    assert lg.store.stats().shared == 1
    assert np.isfinite([h.score for h in lg.search(("memories",), query="ghost")]).all()


def test_adapters_on_one_path_share_one_open_store(tmp_path: Any) -> None:
    """A store opens once per process: a second ConsensusStore, or an AutoGen
    memory, on the same path shares the open one; the last close closes it."""
    from agentsensus.integrations.autogen import ConsensusMemory

    path = os.fspath(tmp_path / "s")
    a = ConsensusStore(path, index={"embed": embedders.hash, "fields": ["text"]})
    b = ConsensusStore(path, index={"embed": embedders.hash, "fields": ["text"]})
    memory = ConsensusMemory(path, "memories.hamlet")
    assert a.store is b.store is memory.store
    a.put(HAMLET, "g", {"text": GHOST})
    got = b.get(HAMLET, "g")
    assert got is not None and got.value == {"text": GHOST}
    assert [r.content for r in asyncio.run(memory.query("ghost")).results] == [GHOST]
    a.close()
    a.close()  # again: nothing, and b still holds the store
    assert not b.store.closed
    b.close()
    assert not memory.store.closed
    asyncio.run(memory.close())
    assert memory.store.closed
    with pytest.raises(ValueError, match="already open in this process with dim"):
        with ConsensusStore(path, index={"embed": embedders.hash}):
            ConsensusStore(path, index={"dims": 8, "embed": lambda texts: [[0.0] * 8 for _ in texts]})


def test_a_batch_of_searches_recalls_together_and_pages_as_each_alone(lg: ConsensusStore) -> None:
    # Several searches over several owners, one with a filter that leaves
    # the first recalls short (so its owners are asked again, wider): the
    # batch recalls through Store.recall_many, and each page is what the
    # search gives alone.
    for who in ("hamlet", "horatio", "ophelia"):
        for n in range(12):
            lg.put(("memories", who), f"k{n}", {"text": f"{who} fact {n} about the ghost", "n": n % 4})
    ops = [
        SearchOp(("memories",), query="the ghost", limit=5),
        SearchOp(("memories", "horatio"), query="fact 3", limit=3, offset=2),
        SearchOp(("memories",), query="about", filter={"n": 3}, limit=5),
        SearchOp(("memories", "ophelia"), limit=2),
    ]
    calls: list[int] = []
    recall_many = lg.store.recall_many

    def counted(queries: Any, **kw: Any) -> Any:
        calls.append(len(queries))
        return recall_many(queries, **kw)

    lg.store.recall_many = counted  # type: ignore[method-assign]
    together = lg.batch(ops)
    lg.store.recall_many = recall_many  # type: ignore[method-assign]
    assert together == [lg.batch([op])[0] for op in ops]
    # Searches that want as many items share k: their first recalls of
    # every owner go at once (3 + 1 + 3), then the filtered one's, wider.
    assert calls[0] == 7 and len(calls) >= 2
    assert len(together[2]) == 5 and all(i.value["n"] == 3 for i in together[2])
