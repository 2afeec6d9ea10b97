"""mem0's filter language (``search`` and ``get_all``'s ``filters=``) on a
real store through ``agentsensus.integrations.mem0.Memory``: each operator,
the logical keys, ``"*"``, and a one-line refusal of an unknown operator."""

from __future__ import annotations

import pytest
from agentsensus.integrations.mem0 import Memory

ROWS = [
    ("Tea at seven.", {"category": "food", "priority": 2, "tag": "Morning Routine"}),
    ("Standup at nine.", {"category": "work", "priority": 5, "tag": "daily meeting"}),
    ("Deploy on Fridays.", {"category": "work", "priority": 8}),
    ("Call mum on Sundays.", {"category": "family"}),
]
ALL = {text for text, _ in ROWS}


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    memory = Memory(path=str(tmp_path_factory.mktemp("filters") / "memory"), embedder="hash")
    for text, meta in ROWS:
        memory.add(text, user_id="alice", metadata=meta)
    memory.add("Tea at seven.", user_id="bob", metadata={"category": "food", "priority": 2})
    yield memory
    memory.close()


def _both(m, filters):
    """What search and get_all find with ``filters`` (alice's scope); the two must agree."""
    f = {"user_id": "alice", **filters}
    found = {r["memory"] for r in m.search("anything at all", filters=f, top_k=10, threshold=0.0)["results"]}
    listed = {r["memory"] for r in m.get_all(filters=f)["results"]}
    assert found == listed, filters
    return found


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"category": "work"}, {"Standup at nine.", "Deploy on Fridays."}),
        ({"category": {"eq": "food"}}, {"Tea at seven."}),
        ({"category": {"ne": "work"}}, {"Tea at seven.", "Call mum on Sundays."}),
        ({"category": {"in": ["food", "family"]}}, {"Tea at seven.", "Call mum on Sundays."}),
        ({"category": ["food", "family"]}, {"Tea at seven.", "Call mum on Sundays."}),
        ({"category": {"nin": ["food", "family"]}}, {"Standup at nine.", "Deploy on Fridays."}),
        ({"priority": {"gt": 5}}, {"Deploy on Fridays."}),
        ({"priority": {"gte": 5}}, {"Standup at nine.", "Deploy on Fridays."}),
        ({"priority": {"lt": 5}}, {"Tea at seven."}),
        ({"priority": {"lte": 5}}, {"Tea at seven.", "Standup at nine."}),
        ({"priority": {"gte": 2, "lt": 8}}, {"Tea at seven.", "Standup at nine."}),
        ({"priority": {"ne": 2}}, {"Standup at nine.", "Deploy on Fridays."}),  # absent fails ne
        ({"priority": {"nin": [2, 5]}}, {"Deploy on Fridays."}),
        ({"tag": {"contains": "meeting"}}, {"Standup at nine."}),
        ({"tag": {"contains": "morning"}}, set()),
        ({"tag": {"icontains": "morning"}}, {"Tea at seven."}),
        ({"priority": "*"}, {"Tea at seven.", "Standup at nine.", "Deploy on Fridays."}),
        ({"category": "*"}, ALL),
        ({"AND": [{"category": "work"}, {"priority": {"lt": 8}}]}, {"Standup at nine."}),
        ({"OR": [{"category": "food"}, {"priority": {"gte": 8}}]}, {"Tea at seven.", "Deploy on Fridays."}),
        ({"NOT": [{"category": "work"}]}, {"Tea at seven.", "Call mum on Sundays."}),
        ({"NOT": [{"category": "work", "priority": 5}]}, ALL - {"Standup at nine."}),
        ({"$or": [{"category": "family"}], "priority": {"$gte": 99}}, set()),
        (
            {"OR": [{"AND": [{"category": "work"}, {"NOT": [{"priority": 8}]}]}, {"category": "family"}]},
            {"Standup at nine.", "Call mum on Sundays."},
        ),
        ({"created_at": {"gte": "2000-01-01T00:00:00+00:00"}}, ALL),
        ({"created_at": {"lt": "2000-01-01"}}, set()),
        ({"role": "user", "category": "food"}, {"Tea at seven."}),
    ],
)
def test_each_operator(m, filters, expected) -> None:
    assert _both(m, filters) == expected


def test_a_condition_on_an_id_beside_the_owners(tmp_path) -> None:
    with Memory(path=str(tmp_path / "memory")) as mem:
        mem.add("Deploy on Fridays.", user_id="alice", agent_id="ops")
        mem.add("Lunch at noon.", user_id="alice", agent_id="chef")
        mem.add("Read the news.", user_id="alice")
        for agent, expected in (
            ({"in": ["ops", "hr"]}, ["Deploy on Fridays."]),
            ({"ne": "ops"}, ["Lunch at noon."]),
            ("*", ["Deploy on Fridays.", "Lunch at noon."]),
        ):
            got = mem.get_all(filters={"user_id": "alice", "agent_id": agent})["results"]
            assert [r["memory"] for r in got] == expected, agent
        with pytest.raises(ValueError, match="agent_id must be one id"):
            mem.get_all(filters={"agent_id": {"in": ["ops"]}})


def test_filters_never_reach_another_users_memories(m) -> None:
    assert _both(m, {"category": "food"}) == {"Tea at seven."}
    bobs = m.get_all(filters={"user_id": "bob", "OR": [{"category": "*"}, {"priority": {"lt": 100}}]})
    assert [(r["memory"], r["user_id"]) for r in bobs["results"]] == [("Tea at seven.", "bob")]


def test_an_unknown_operator_is_one_line_naming_the_operators(m) -> None:
    for call in (
        lambda: m.search("tea", filters={"user_id": "alice", "priority": {"between": [1, 3]}}),
        lambda: m.get_all(filters={"user_id": "alice", "OR": [{"priority": {"like": "x"}}]}),
    ):
        with pytest.raises(ValueError) as e:
            call()
        message = str(e.value)
        assert "\n" not in message and "unknown operator" in message
        assert "eq, ne, in, nin, gt, gte, lt, lte, contains, icontains" in message and "AND, OR, NOT" in message
    with pytest.raises(ValueError, match="OR takes a non-empty list of filter dicts"):
        m.search("tea", filters={"user_id": "alice", "OR": []})
    with pytest.raises(TypeError, match="in takes a list"):
        m.get_all(filters={"user_id": "alice", "category": {"in": "food"}})
    with pytest.raises(ValueError, match="user_id must be one id"):
        m.get_all(filters={"user_id": "*"})
