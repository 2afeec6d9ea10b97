"""mem0's documented examples, call by call, against
``agentsensus.integrations.mem0.Memory`` on a real store: the import
changes, the calls do not. The sequence follows mem0's open-source Python
quickstart (docs.mem0.ai, "Python SDK Quickstart": add, get_all, get,
search, update, history, delete, delete_all, reset) and its pages on
metadata filters and the agent/run scopes; the message texts are our own."""

from __future__ import annotations

import pytest
from agentsensus.integrations.mem0 import Memory

ITEM_KEYS = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}


@pytest.fixture
def m(tmp_path):
    memory = Memory(path=str(tmp_path / "memory"), embedder="hash")
    yield memory
    memory.close()


def test_the_quickstart_sequence(m) -> None:
    messages = [
        {"role": "user", "content": "I'm planning a trip to the mountains next month."},
        {"role": "assistant", "content": "Hiking boots and a warm jacket will help."},
        {"role": "user", "content": "I don't like the cold, but I love hiking."},
    ]
    result = m.add(messages, user_id="alice", metadata={"category": "travel"})
    assert [r["event"] for r in result["results"]] == ["ADD"] * 3
    assert {"id", "memory", "event"} <= set(result["results"][0])

    all_memories = m.get_all(user_id="alice")
    assert len(all_memories["results"]) == 3
    item = all_memories["results"][0]
    assert ITEM_KEYS <= set(item) and item["user_id"] == "alice" and item["metadata"] == {"category": "travel"}

    memory_id = item["id"]
    specific_memory = m.get(memory_id)
    assert specific_memory["memory"] == item["memory"] and specific_memory["created_at"] is not None

    related_memories = m.search(query="What does alice love doing?", user_id="alice")
    assert related_memories["results"] and "score" in related_memories["results"][0]
    assert related_memories["results"][0]["memory"] == "I don't like the cold, but I love hiking."

    result = m.update(memory_id=memory_id, data="I'm planning a trip to the coast next month.")
    assert result == {"message": "Memory updated successfully!"}
    assert m.get(memory_id)["memory"] == "I'm planning a trip to the coast next month."

    history = m.history(memory_id=memory_id)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, item["memory"]),
        ("UPDATE", item["memory"], "I'm planning a trip to the coast next month."),
    ]
    assert {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "is_deleted"} <= set(history[0])

    assert m.delete(memory_id=memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None

    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(user_id="alice")["results"] == []

    m.add("I work as a nurse.", user_id="bob")
    m.reset()
    assert m.get_all(user_id="bob")["results"] == []


def test_metadata_filters_threshold_and_scopes(m) -> None:
    m.add("I like green tea in the morning.", user_id="alice", metadata={"category": "food", "priority": 2})
    m.add("Meetings go before noon.", user_id="alice", metadata={"category": "work", "priority": 5})
    m.add("The deploy runs on Fridays.", user_id="alice", agent_id="ops", metadata={"category": "work"})
    m.add("Shift starts at seven.", agent_id="ops")

    food = m.search("what does alice drink?", user_id="alice", filters={"category": "food"})
    assert [r["memory"] for r in food["results"]] == ["I like green tea in the morning."]
    urgent = m.search("anything", user_id="alice", filters={"priority": {"$gte": 3}})
    assert [r["memory"] for r in urgent["results"]] == ["Meetings go before noon."]
    work = m.search("work", user_id="alice", filters={"category": {"$in": ["work"]}}, limit=5)
    assert {r["memory"] for r in work["results"]} == {"Meetings go before noon.", "The deploy runs on Fridays."}
    ops = m.search("work", user_id="alice", agent_id="ops")
    assert [r["memory"] for r in ops["results"]] == ["The deploy runs on Fridays."]
    assert m.search("tea", user_id="alice", threshold=1.01)["results"] == []
    agent_only = m.get_all(agent_id="ops")
    assert [r["memory"] for r in agent_only["results"]] == ["Shift starts at seven."]
    assert m.search("anything", user_id="nobody")["results"] == []


def test_refusals_are_one_line(m, tmp_path) -> None:
    with pytest.raises(ValueError, match="At least one of 'user_id', 'agent_id', or 'run_id'"):
        m.add("hello")
    with pytest.raises(ValueError, match="infer=True needs an extractor"):
        m.add("hello", user_id="alice", infer=True)
    with pytest.raises(ValueError, match="not supported"):
        Memory.from_config({"path": str(tmp_path / "x"), "llm": {"provider": "openai"}})
    with pytest.raises(TypeError, match="metadata must be a dict"):
        m.add("hello", user_id="alice", metadata=["x"])
    assert m.get_all(user_id="alice")["results"] == []  # nothing was written


def test_infer_uses_the_extractor_and_from_config(tmp_path) -> None:
    def extractor(messages):
        return [part.strip() + "." for msg in messages for part in msg["content"].split(".") if part.strip()]

    config = {"vector_store": {"provider": "agentsensus", "config": {"path": str(tmp_path / "mem")}}}
    with Memory.from_config({**config, "embedder": {"provider": "hash", "config": {"embedding_dims": 64}}}) as m:
        m.extractor = extractor
        got = m.add([{"role": "user", "content": "I live in Oslo. I cycle to work."}], user_id="u", infer=True)
        assert [r["memory"] for r in got["results"]] == ["I live in Oslo.", "I cycle to work."]
        assert m.store.dim == 64
