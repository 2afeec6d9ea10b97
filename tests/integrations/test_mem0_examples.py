"""mem0's documented examples, call by call, against
``agentsensus.integrations.mem0.Memory`` on a real store: the import
changes, the calls do not. The sequence follows mem0 2.x's open-source
Python quickstart (docs.mem0.ai, "Python SDK Quickstart": add, get_all,
get, search, update, history, delete, delete_all, reset, with scopes in
``filters``) and its page on metadata filters; the 1.x call shapes the
adapter keeps are run too. The message texts are our own."""

from __future__ import annotations

import uuid
from pathlib import Path

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
    assert set(result["results"][0]) == {"id", "memory", "event", "actor_id", "role"}
    assert [r["role"] for r in result["results"]] == ["user", "assistant", "user"]

    all_memories = m.get_all(filters={"user_id": "alice"})
    assert len(all_memories["results"]) == 3
    item = all_memories["results"][0]
    assert set(item) == ITEM_KEYS | {"user_id", "role"}  # get_all items carry no score, as mem0's
    assert item["user_id"] == "alice" and item["metadata"] == {"category": "travel"}

    memory_id = item["id"]
    uuid.UUID(memory_id)  # shaped as mem0's ids
    specific_memory = m.get(memory_id)
    assert specific_memory is not None and specific_memory["memory"] == item["memory"]
    assert specific_memory["score"] is None and specific_memory["created_at"] is not None

    related = m.search(query="Does alice love hiking?", filters={"user_id": "alice"}, top_k=3)
    assert related["results"][0]["memory"] == "I don't like the cold, but I love hiking."
    assert 0.1 <= related["results"][0]["score"] <= 1.0

    result = m.update(memory_id=memory_id, text="I'm planning a trip to the coast next month.")
    assert result == {"message": "Memory updated successfully!"}
    assert m.get(memory_id)["memory"] == "I'm planning a trip to the coast next month."
    m.update(memory_id, metadata={"priority": "high"})
    assert m.get(memory_id)["metadata"] == {"category": "travel", "priority": "high"}

    history = m.history(memory_id=memory_id)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, item["memory"]),
        ("UPDATE", item["memory"], "I'm planning a trip to the coast next month."),
    ]
    assert set(history[0]) == {
        "id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted",
        "actor_id", "role",
    }  # fmt: skip
    assert {h["memory_id"] for h in history} == {memory_id}

    assert m.delete(memory_id=memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None
    assert m.history(memory_id) == []
    with pytest.raises(ValueError, match="not found"):
        m.delete(memory_id)

    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "alice"})["results"] == []

    m.add("I work as a nurse.", user_id="bob")
    assert m.reset() is None
    assert m.get_all(filters={"user_id": "bob"})["results"] == []


def test_the_1x_call_shapes_kept(m) -> None:
    """mem0 1.x's top-level ids in search/get_all, ``limit=``, ``data=`` and
    ``$``-operators still work, with the same results as the 2.x shapes."""
    m.add("I like green tea in the morning.", user_id="alice", metadata={"category": "food", "priority": 2})
    m.add("Meetings go before noon.", user_id="alice", metadata={"category": "work", "priority": 5})
    old = m.search("green tea", user_id="alice", limit=1, filters={"priority": {"$lte": 3}})
    new = m.search("green tea", filters={"user_id": "alice", "priority": {"lte": 3}}, top_k=1)
    assert old == new and [r["memory"] for r in new["results"]] == ["I like green tea in the morning."]
    assert m.get_all(user_id="alice", limit=1) == m.get_all(filters={"user_id": "alice"}, top_k=1)
    rid = new["results"][0]["id"]
    m.update(rid, data="I like black tea in the morning.")
    assert m.get(rid)["memory"] == "I like black tea in the morning."


def test_metadata_filters_threshold_and_scopes(m) -> None:
    m.add("I like green tea in the morning.", user_id="alice", metadata={"category": "food", "priority": 2})
    m.add("Meetings go before noon.", user_id="alice", metadata={"category": "work", "priority": 5})
    m.add("The deploy runs on Fridays.", user_id="alice", agent_id="ops", metadata={"category": "work"})
    m.add("Shift starts at seven.", agent_id="ops")
    alice = {"user_id": "alice"}

    def found(query, **filters):
        hits = m.search(query, filters={**alice, **filters}, threshold=0.0)["results"]
        return {r["memory"] for r in hits}

    assert found("what does alice drink?", category="food") == {"I like green tea in the morning."}
    assert found("anything", priority={"gte": 3}) == {"Meetings go before noon."}
    assert found("work", category={"in": ["work"]}) == {"Meetings go before noon.", "The deploy runs on Fridays."}
    assert found("work", agent_id="ops") == {"The deploy runs on Fridays."}
    assert found("tea", category="*") == {
        "I like green tea in the morning.", "Meetings go before noon.", "The deploy runs on Fridays.",
    }  # fmt: skip
    assert found("tea", priority="*") == {"I like green tea in the morning.", "Meetings go before noon."}
    assert found("tea", OR=[{"priority": 2}, {"agent_id": "ops"}]) == {
        "I like green tea in the morning.", "The deploy runs on Fridays.",
    }  # fmt: skip
    assert m.search("tea", filters=alice)["results"][0]["memory"] == "I like green tea in the morning."
    assert m.search("tea", filters=alice, threshold=1.0)["results"] == []
    agent_only = m.get_all(filters={"agent_id": "ops"})
    assert [r["memory"] for r in agent_only["results"]] == ["Shift starts at seven."]
    assert m.search("anything", filters={"user_id": "nobody"})["results"] == []


def test_refusals_are_one_line(m, tmp_path) -> None:
    with pytest.raises(ValueError, match="At least one of 'user_id', 'agent_id', or 'run_id'"):
        m.add("hello")
    with pytest.raises(ValueError, match="filters must contain at least one of: user_id, agent_id, run_id"):
        m.search("hello", filters={"category": "x"})
    with pytest.raises(ValueError, match="At least one filter is required to delete all memories"):
        m.delete_all()
    with pytest.raises(ValueError, match="not supported"):
        Memory.from_config({"path": str(tmp_path / "x"), "llm": {"provider": "openai"}})
    with pytest.raises(TypeError, match="metadata must be a dict"):
        m.add("hello", user_id="alice", metadata=["x"])
    with pytest.raises(ValueError, match="Invalid threshold"):
        m.search("hello", filters={"user_id": "alice"}, threshold=2)
    with pytest.raises(ValueError, match="At least one of text, metadata"):
        m.update(str(uuid.uuid4()))
    with pytest.raises(ValueError, match="not found"):
        m.update(str(uuid.uuid4()), text="x")
    assert m.get(str(uuid.uuid4())) is None and m.get("2") is None and m.history("2") == []
    assert m.get_all(filters={"user_id": "alice"})["results"] == []  # nothing was written


def test_infer_uses_the_extractor_else_adds_messages_as_they_are(tmp_path) -> None:
    def extractor(messages):
        return [part.strip() + "." for msg in messages for part in msg["content"].split(".") if part.strip()]

    config = {"vector_store": {"provider": "agentsensus", "config": {"path": str(tmp_path / "mem")}}}
    with Memory.from_config({**config, "embedder": {"provider": "hash", "config": {"embedding_dims": 64}}}) as m:
        said = [{"role": "user", "content": "I live in Oslo. I cycle to work."}]
        plain = m.add(said, user_id="u")  # infer=True by default, as mem0; no extractor: as it is
        assert [r["memory"] for r in plain["results"]] == ["I live in Oslo. I cycle to work."]
        m.extractor = extractor
        got = m.add(said, user_id="v", infer=True)
        assert [r["memory"] for r in got["results"]] == ["I live in Oslo.", "I cycle to work."]
        assert set(got["results"][0]) == {"id", "memory", "event"}
        assert m.store.dim == 64


def test_the_docs_example_runs() -> None:
    """docs/integrations.md's mem0 example, run as written (its asserts are
    the check): the copy-paste code a reader starts from."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    section = doc[doc.index("## mem0:") :]
    body = section[section.index("```python\n") + len("```python\n") :]
    code = body[: body.index("```")]
    assert "from agentsensus.integrations.mem0 import Memory" in code and "m.delete(mine" in code
    exec(compile(code, "docs/integrations.md (mem0)", "exec"), {"__name__": "__doc_example__"})
