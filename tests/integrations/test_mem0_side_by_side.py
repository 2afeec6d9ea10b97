"""The same documented mem0 2.x calls against real mem0 (``mem0ai`` 2.2.1,
offline: ``infer=False``, its local Qdrant in a temp directory, our hash
embedder as its embedder) and against ``agentsensus.integrations.mem0``,
compared call by call: the same results, ids mapped (each side's ids are its
own) and times left out (each side stamps its own).

Where the two differ by design, the test says so and asserts both sides:

- CONSENSUS: one user adding the same words twice. mem0 makes a second
  memory (two ``ADD``); the store merges them into the record that user
  already holds (``ADD``, then ``UPDATE`` with the same id; one memory).
- SCOPES: a memory's owner is its user (else agent, else run); a search or
  listing of ``agent_id`` alone reaches that agent's own memories, not a
  user's memories made with that agent, which mem0's payload filter returns.
- ``"*"``: mem0's local Qdrant cannot test that a field exists and drops the
  clause (every memory passes); the adapter keeps memories that have the
  field, as mem0's pgvector and OpenSearch stores do.
- ``contains``/``icontains``: mem0's local Qdrant matches whole words in
  any case for both (``"Drink"`` is not in ``"Hot Drinks"``, ``"drinks"``
  is); the adapter matches any part of the text, ``contains`` in the same
  case and ``icontains`` in any, as the operators' names say.
- HISTORY: the store's history is of text changes: a metadata-only update
  leaves no row, and a deleted memory has none (its words leave the store);
  mem0 keeps an ``UPDATE`` row for the first and a ``DELETE`` row.
- ORDER: ``get_all``'s order is not part of mem0's contract (its Qdrant
  lists by point id, a random UUID); both lists are compared sorted.
"""

from __future__ import annotations

import importlib
import logging
import os
import tempfile
from typing import Any, Callable

import pytest
from agentsensus import embedders
from agentsensus.integrations.mem0 import Memory as Ours

TRIP = [
    {"role": "user", "content": "I'm planning a trip to the mountains next month."},
    {"role": "assistant", "content": "Hiking boots and a warm jacket will help."},
    {"role": "user", "content": "I don't like the cold, but I love hiking.", "name": "al"},
]
ALICE = {"user_id": "alice"}


class _HashEmbedder:
    """mem0's embedder interface over agentsensus's hash embedder."""

    def embed(self, text: Any, memory_action: Any = None) -> list[float]:
        return [float(x) for x in embedders.hash([str(text)])[0]]


@pytest.fixture
def pair(tmp_path, monkeypatch):
    monkeypatch.setenv("MEM0_TELEMETRY", "False")  # no telemetry posts from an offline test
    # mem0 reads its home once, at import: one that outlives this test, not in ~.
    monkeypatch.setenv("MEM0_DIR", os.path.join(tempfile.gettempdir(), "agentsensus-mem0-home"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused-offline")  # its LLM client is built, never called
    logging.getLogger("mem0").setLevel(logging.ERROR)
    mem0 = importlib.import_module("mem0")
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "m", "path": str(tmp_path / "qdrant"), "embedding_model_dims": 384},
        },
        "history_db_path": str(tmp_path / "history.db"),
    }
    theirs = mem0.Memory.from_config(config)
    theirs.embedding_model = _HashEmbedder()
    ours = Ours(path=str(tmp_path / "ours"), embedder="hash")
    yield theirs, ours
    theirs.close()
    ours.close()


class Both:
    """Runs one call on both sides and compares what comes back, with each
    side's ids replaced by the names of the memories they were given for."""

    def __init__(self, theirs: Any, ours: Any) -> None:
        self.sides = (theirs, ours)
        self.names: tuple[dict[str, str], dict[str, str]] = ({}, {})

    def ids(self, name: str) -> tuple[str, str]:
        a, b = ({v: k for k, v in n.items()}[name] for n in self.names)
        return a, b

    def _norm(self, side: int, value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if k in ("created_at", "updated_at"):
                    assert v is None or isinstance(v, str), (k, v)
                elif k == "score":
                    out[k] = None if v is None else round(v, 2)
                elif not (k == "id" and "memory_id" in value):  # a history row's own id
                    out[k] = self._norm(side, v)
            return out
        if isinstance(value, list):
            return [self._norm(side, v) for v in value]
        if isinstance(value, str) and value in self.names[side]:
            return self.names[side][value]
        return value

    def call(self, method: str, *args: Any, ids: tuple[str, ...] = (), sort: bool = False, **kwargs: Any) -> Any:
        got = []
        for side, mem in enumerate(self.sides):
            real = [self.ids(n)[side] for n in ids]
            got.append(getattr(mem, method)(*real, *args, **kwargs))
        return got

    def same(self, method: str, *args: Any, name: Callable[[int], str] | None = None, **kwargs: Any) -> Any:
        """The call on both sides; their results must be equal. ``name``
        names the memories an ``add`` made (by result index)."""
        theirs, ours = self.call(method, *args, **kwargs)
        if name is not None:
            for side, res in enumerate((theirs, ours)):
                for n, r in enumerate(res["results"]):
                    self.names[side][r["id"]] = name(n)
        a, b = self._norm(0, theirs), self._norm(1, ours)
        if kwargs.get("sort") or method == "get_all":
            a, b = ({**x, "results": sorted(x["results"], key=lambda r: r["memory"])} for x in (a, b))
        assert a == b, f"{method}{args}{kwargs}: mem0 {a} != ours {b}"
        return b


@pytest.mark.slow
def test_the_documented_calls_match_mem0(pair) -> None:
    theirs, ours = pair
    both = Both(theirs, ours)
    added = both.same(
        "add", TRIP, user_id="alice", metadata={"category": "travel"}, infer=False, name=lambda n: f"t{n}"
    )
    assert [r["event"] for r in added["results"]] == ["ADD"] * 3
    both.same(
        "add", "Meetings go before noon.", user_id="alice", metadata={"priority": 5}, infer=False, name="m".format
    )
    both.same("add", "I like green tea.", user_id="alice", metadata={"priority": 2, "tag": "Hot Drinks"}, infer=False,
              name="g".format)  # fmt: skip
    both.same("add", "Shift starts at seven.", agent_id="ops", infer=False, name="s".format)
    listed = both.same("get_all", filters=ALICE)
    assert len(listed["results"]) == 5
    both.same("get_all", filters=ALICE, top_k=5)
    for name in ("t0", "t2", "m", "s"):
        a, b = both.ids(name)
        assert both._norm(0, theirs.get(a)) == both._norm(1, ours.get(b))
    hits = both.same("search", "Does alice love hiking?", filters=ALICE, top_k=3)
    assert hits["results"][0]["memory"] == "I don't like the cold, but I love hiking."
    both.same("search", "trip to the mountains", filters=ALICE, top_k=2, threshold=0.3)
    for filters in (
        {"category": "travel"},
        {"priority": {"eq": 5}},
        {"priority": {"ne": 5}},
        {"priority": {"in": [2, 3]}},
        {"priority": {"nin": [2, 3]}},
        {"priority": {"gt": 2}},
        {"priority": {"gte": 2}},
        {"priority": {"lt": 5}},
        {"priority": {"lte": 5}},
        {"role": "assistant"},
        {"actor_id": "al"},
        {"tag": {"contains": "Drinks"}},
        {"AND": [{"priority": {"gte": 2}}, {"priority": {"lt": 5}}]},
        {"OR": [{"priority": 5}, {"category": "travel"}]},
        {"NOT": [{"category": "travel"}]},
    ):
        both.same(
            "search",
            "I like hiking boots, meetings, green tea, a trip",
            filters={**ALICE, **filters},
            top_k=10,
            threshold=0.0,
            sort=True,
        )

    a, b = both.ids("t0")
    assert theirs.update(a, text="I'm planning a trip to the coast.") == ours.update(
        b, text="I'm planning a trip to the coast."
    )
    assert both._norm(0, theirs.get(a)) == both._norm(1, ours.get(b))
    assert both._norm(0, theirs.history(a)) == both._norm(1, ours.history(b))
    assert theirs.update(a, metadata={"x": 1}) == ours.update(b, metadata={"x": 1})
    assert both._norm(0, theirs.get(a)) == both._norm(1, ours.get(b))
    assert theirs.delete(a) == ours.delete(b)
    assert theirs.get(a) is None and ours.get(b) is None
    for mem, mid in ((theirs, a), (ours, b)):
        with pytest.raises(ValueError, match="not found"):
            mem.update(mid, text="again")
    both.same("get_all", filters=ALICE)
    assert theirs.delete_all(user_id="alice") == ours.delete_all(user_id="alice")
    both.same("get_all", filters=ALICE)
    both.same("get_all", filters={"agent_id": "ops"})
    assert theirs.reset() is None and ours.reset() is None
    both.same("get_all", filters={"agent_id": "ops"})


def test_two_users_with_the_same_words_match_mem0(pair) -> None:
    theirs, ours = pair
    both = Both(theirs, ours)
    both.same("add", "I am allergic to penicillin", user_id="bob", infer=False, name="bob".format)
    got = both.same("add", "I am allergic to penicillin", user_id="alice", infer=False, name="alice".format)
    assert got["results"][0]["event"] == "ADD"  # on both sides: nothing says bob said it first
    a, b = both.ids("alice")
    assert theirs.delete(a) == ours.delete(b)
    both.same("get_all", filters={"user_id": "alice"})
    bobs = both.same("get_all", filters={"user_id": "bob"})
    assert [r["id"] for r in bobs["results"]] == ["bob"]
    both.same("search", "penicillin", filters={"user_id": "bob"})


def test_the_differences_are_the_listed_ones(pair) -> None:
    theirs, ours = pair
    both = Both(theirs, ours)
    # CONSENSUS: the same words twice from one user.
    first, again = (both.call("add", "I am allergic to penicillin", user_id="alice", infer=False) for _ in range(2))
    assert [first[0]["results"][0]["event"], again[0]["results"][0]["event"]] == ["ADD", "ADD"]
    assert first[0]["results"][0]["id"] != again[0]["results"][0]["id"]
    assert [first[1]["results"][0]["event"], again[1]["results"][0]["event"]] == ["ADD", "UPDATE"]
    assert first[1]["results"][0]["id"] == again[1]["results"][0]["id"]
    counts = [len(r["results"]) for r in both.call("get_all", filters=ALICE)]
    assert counts == [2, 1]
    # SCOPES: alice's memory made with agent ops.
    both.call("add", "The deploy runs on Fridays.", user_id="alice", agent_id="ops", infer=False)
    ops = [{r["memory"] for r in res["results"]} for res in both.call("get_all", filters={"agent_id": "ops"})]
    assert ops == [{"The deploy runs on Fridays."}, set()]
    # "*": a field some memories lack.
    both.call("add", "Tea at seven.", user_id="alice", metadata={"category": "food"}, infer=False)
    star = both.call("search", "tea", filters={**ALICE, "category": "*"}, threshold=0.0)
    assert [len(r["results"]) for r in star] == [4, 1]
    # contains/icontains: whole words in any case (their Qdrant) or any part of the text.
    both.call("add", "Standup at nine.", user_id="alice", metadata={"tag": "Daily Meeting"}, infer=False)
    for op, text, expected in (
        ("contains", "meeting", [["Standup at nine."], []]),
        ("contains", "Meet", [[], ["Standup at nine."]]),
        ("icontains", "meet", [[], ["Standup at nine."]]),
    ):
        got = both.call("search", "standup", filters={**ALICE, "tag": {op: text}}, threshold=0.0)
        assert [[r["memory"] for r in res["results"]] for res in got] == expected, (op, text)
    # HISTORY: a metadata-only update, then a delete.
    res = both.call("add", "Call mum on Sundays.", user_id="alice", infer=False)
    a, b = (r["results"][0]["id"] for r in res)
    assert theirs.update(a, metadata={"k": 1}) == ours.update(b, metadata={"k": 1})
    assert [h["event"] for h in theirs.history(a)] == ["ADD", "UPDATE"]
    assert [h["event"] for h in ours.history(b)] == ["ADD"]
    assert theirs.delete(a) == ours.delete(b)
    assert [h["event"] for h in theirs.history(a)] == ["ADD", "UPDATE", "DELETE"] and ours.history(b) == []
