"""Two LangGraph agents remember through one ConsensusStore.

Run: pip install 'agentsensus[langgraph]'; python examples/langgraph_consensus_store.py
Each agent's namespace is its own owner; what both witnessed is stored once,
with both as owners, and each still recalls only its own memories.
"""

from __future__ import annotations

import tempfile
from typing import Any, TypedDict

from agentsensus import embedders
from agentsensus.integrations.langgraph import ConsensusStore
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime


class State(TypedDict):
    agent: str
    saw: list[str]
    question: str
    answer: list[str]


def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    for n, fact in enumerate(state["saw"]):
        runtime.store.put(("memories", state["agent"]), f"fact-{n}", {"text": fact})
    return {}


def recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    hits = runtime.store.search(("memories", state["agent"]), query=state["question"], limit=2)
    return {"answer": [h.value["text"] for h in hits]}


def main() -> None:
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    with tempfile.TemporaryDirectory() as tmp:
        store = ConsensusStore(f"{tmp}/memory", index={"embed": embedders.hash, "fields": ["text"]})
        app = graph.compile(store=store)
        seen = {
            "hamlet": ["The ghost walks on the platform at midnight", "The king drinks deep tonight"],
            "horatio": ["The ghost walks on the platform at midnight", "Marcellus fears the apparition"],
        }
        for agent, saw in seen.items():
            out = app.invoke({"agent": agent, "saw": saw, "question": "what walks at midnight?", "answer": []})
            print(f"{agent} recalls: {out['answer']}")
        stats = store.store.stats()
        print(f"records={stats.records} shared={stats.shared} max_owners={stats.max_owners}")
        assert stats.records == 3 and stats.shared == 1
        store.close()


if __name__ == "__main__":
    main()
