"""Each user of ``agentsensus.integrations.mem0.Memory`` holds its own
memories, on a real store: two users who say the same words share one record
(the store's consensus) but not a memory id, a delete, an update, or what
``add`` tells them; an id of another user's memory is an unknown id."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from agentsensus.integrations.mem0 import AsyncMemory, Memory
from agentsensus.integrations.mem0_ids import KEY_FILE

ALLERGY = "I am allergic to penicillin"


@pytest.fixture
def m(tmp_path):
    memory = Memory(path=str(tmp_path / "memory"), embedder="hash")
    yield memory
    memory.close()


def _shared(m):
    bob = m.add(ALLERGY, user_id="bob")["results"][0]
    alice = m.add(ALLERGY, user_id="alice")["results"][0]
    return alice, bob


def test_two_users_share_a_record_but_not_an_id(m) -> None:
    alice, bob = _shared(m)
    assert m.store.stats().records == 1  # one record: the consensus
    assert alice["id"] != bob["id"]
    assert (alice["event"], bob["event"]) == ("ADD", "ADD")  # never "someone else said it"
    assert m.add(ALLERGY, user_id="alice")["results"][0] == {**alice, "event": "UPDATE"}  # alice held it
    for who, item in (("alice", alice), ("bob", bob)):
        got = m.get(item["id"])
        assert got is not None and got["user_id"] == who and got["id"] == item["id"]


def test_alices_delete_of_a_shared_memory_leaves_bobs(m) -> None:
    alice, bob = _shared(m)
    assert m.delete(alice["id"]) == {"message": "Memory deleted successfully!"}
    assert m.get(alice["id"]) is None
    assert m.get_all(filters={"user_id": "alice"})["results"] == []
    kept = m.get(bob["id"])
    assert kept is not None and kept["memory"] == ALLERGY
    assert [r["id"] for r in m.get_all(filters={"user_id": "bob"})["results"]] == [bob["id"]]
    assert [r["id"] for r in m.search("penicillin", filters={"user_id": "bob"})["results"]] == [bob["id"]]


def test_another_users_id_is_an_unknown_id(m) -> None:
    _, bob = _shared(m)
    salary = m.add("My salary is 90k", user_id="bob")["results"][0]["id"]
    unknown = str(uuid.uuid4())
    for mid in (salary, bob["id"]):
        for memory_id in (mid, unknown):
            assert m.get(memory_id, user_id="alice") is None
            assert m.history(memory_id, user_id="alice") == []
            with pytest.raises(ValueError, match=f"^Memory with id {memory_id} not found$"):
                m.delete(memory_id, user_id="alice")
            with pytest.raises(ValueError, match=f"^Memory with id {memory_id} not found. Please provide"):
                m.update(memory_id, text="changed", user_id="alice")
    got = m.get(salary, user_id="bob")
    assert got is not None and got["memory"] == "My salary is 90k"
    assert [h["event"] for h in m.history(bob["id"])] == ["ADD"]


def test_ids_are_not_sequential_and_survive_reopen(tmp_path) -> None:
    path = str(tmp_path / "memory")
    with Memory(path=path) as m:
        added = m.add([{"role": "user", "content": f"fact number {n}"} for n in range(5)], user_id="alice")
        ids = [r["id"] for r in added["results"]]
        listed = m.get_all(filters={"user_id": "alice"})["results"]
    assert all(not i.isdigit() for i in ids) and len(set(ids)) == 5
    assert all(str(uuid.UUID(i)) == i for i in ids)
    assert os.path.isfile(os.path.join(path, KEY_FILE))
    with Memory(path=path) as again:
        assert again.get_all(filters={"user_id": "alice"})["results"] == listed
        assert [again.get(i)["memory"] for i in ids] == [f"fact number {n}" for n in range(5)]
        assert again.get(str(again.store.owned("user:alice")[0])) is None  # a record id is no memory id
    with Memory(path=str(tmp_path / "other")) as other:  # another store: another secret
        other.add([{"role": "user", "content": f"fact number {n}"} for n in range(5)], user_id="alice")
        assert {r["id"] for r in other.get_all(filters={"user_id": "alice"})["results"]}.isdisjoint(ids)


def test_updating_a_shared_memory_moves_only_alices_under_the_same_id(m) -> None:
    alice, bob = _shared(m)
    m.update(alice["id"], text="I am allergic to penicillin and to latex")
    assert m.get(alice["id"])["memory"] == "I am allergic to penicillin and to latex"
    assert m.get(bob["id"])["memory"] == ALLERGY
    assert [r["id"] for r in m.get_all(filters={"user_id": "alice"})["results"]] == [alice["id"]]
    m.update(alice["id"], metadata={"severity": "high"})
    assert m.get(alice["id"], user_id="alice")["metadata"] == {"severity": "high"}
    assert m.get(bob["id"])["metadata"] is None
    m.delete(alice["id"])
    assert m.get(alice["id"]) is None and m.get(bob["id"]) is not None


def test_history_shows_only_the_owners_own_changes(m) -> None:
    alice, bob = _shared(m)
    m.update(bob["id"], text="I am allergic to penicillin since 2001")
    rows = m.history(alice["id"])
    assert [(h["event"], h["new_memory"]) for h in rows] == [("ADD", ALLERGY)]
    assert all(h["actor_id"] is None for h in rows)  # never the other owner's name
    bob_rows = m.history(bob["id"])
    assert [h["event"] for h in bob_rows][0] == "ADD" and bob_rows[-1]["new_memory"].endswith("since 2001")


def test_async_memory_mirrors_memory(tmp_path) -> None:
    """The same calls through ``AsyncMemory`` and ``Memory`` on two stores
    return the same results, ids and times aside."""

    def calls(ids: dict[str, str]):
        yield "add", ([{"role": "user", "content": ALLERGY, "name": "al"}],), {"user_id": "alice"}
        yield "add", (ALLERGY,), {"user_id": "bob", "metadata": {"source": "chart"}}
        yield "search", ("penicillin",), {"filters": {"user_id": "bob", "source": {"eq": "chart"}}, "top_k": 2}
        yield "get_all", (), {"filters": {"user_id": "alice"}}
        yield "update", (ids.get("alice"),), {"text": "Allergic to penicillin", "metadata": {"k": 1}}
        yield "get", (ids.get("alice"),), {}
        yield "history", (ids.get("alice"),), {}
        yield "get", (ids.get("alice"),), {"user_id": "bob"}
        yield "delete", (ids.get("bob"),), {}
        yield "get_all", (), {"filters": {"user_id": "bob"}}
        yield "delete_all", (), {"filters": {"user_id": "alice"}}
        yield "reset", (), {}

    def strip(value, ids):
        names = {v: k for k, v in ids.items()}
        if isinstance(value, dict):
            return {k: strip(v, ids) for k, v in value.items() if k not in ("created_at", "updated_at")}
        if isinstance(value, list):
            return [strip(v, ids) for v in value]
        if isinstance(value, str) and value in names:
            return names[value]
        if isinstance(value, str) and value.count("-") == 4 and len(value) == 36:
            return "<uuid>"
        return value

    def note(name, got, ids, user):
        if name == "add":
            ids[user] = got["results"][0]["id"]

    sync_ids: dict[str, str] = {}
    sync_out = []
    with Memory(path=str(tmp_path / "sync")) as m:
        for name, args, kwargs in calls(sync_ids):
            got = getattr(m, name)(*args, **kwargs)
            note(name, got, sync_ids, kwargs.get("user_id"))
            sync_out.append(strip(got, sync_ids))

    async def run():
        ids: dict[str, str] = {}
        out = []
        async with AsyncMemory(path=str(tmp_path / "async")) as am:
            for name, args, kwargs in calls(ids):
                got = await getattr(am, name)(*args, **kwargs)
                note(name, got, ids, kwargs.get("user_id"))
                out.append(strip(got, ids))
        return out

    assert asyncio.run(run()) == sync_out
    assert sync_out[0]["results"][0]["event"] == "ADD" and sync_out[1]["results"][0]["event"] == "ADD"
    assert sync_out[7] is None  # alice's id asked for as bob: unknown
    assert sync_out[9] == {"results": []}


def test_an_id_changed_in_any_digit_names_no_memory(m) -> None:
    """Ids are sealed: changing one hex digit of a real id (as a guess from
    it would) gives an id of no memory, not a neighbour's."""
    added = m.add([{"role": "user", "content": f"fact number {n}"} for n in range(20)], user_id="bob")
    real = added["results"][7]["id"]
    digits = [n for n, ch in enumerate(real) if ch != "-"]
    for n in digits:
        changed = real[:n] + ("0" if real[n] != "0" else "1") + real[n + 1 :]
        assert m.get(changed) is None, changed
    assert m.get(real)["memory"] == "fact number 7"


def test_rejoining_a_record_after_moving_out_of_it_gets_a_new_id(m) -> None:
    """alice's update moves her words out of the record she shares with bob
    (her id goes with them); when she says the old words again, she is back
    in that record with a second memory, which gets an id of its own."""
    alice, bob = _shared(m)
    m.update(alice["id"], text="I am allergic to latex")
    again = m.add(ALLERGY, user_id="alice")["results"][0]
    assert again["event"] == "ADD" and again["id"] not in (alice["id"], bob["id"])
    assert m.get(alice["id"])["memory"] == "I am allergic to latex"
    assert m.get(again["id"])["memory"] == ALLERGY
    listed = {r["id"]: r["memory"] for r in m.get_all(filters={"user_id": "alice"})["results"]}
    assert listed == {alice["id"]: "I am allergic to latex", again["id"]: ALLERGY}
    m.delete(again["id"])
    assert m.get(alice["id"]) is not None and m.get(bob["id"]) is not None and m.get(again["id"]) is None


def test_saying_a_moved_memorys_words_again_keeps_its_id(m) -> None:
    """A memory that an update moved out of a shared record keeps its id
    when its owner adds the same words again (``UPDATE``, same id)."""
    alice, _ = _shared(m)
    m.update(alice["id"], text="I am allergic to latex")
    again = m.add("I am allergic to latex", user_id="alice", metadata={"source": "chart"})["results"][0]
    assert (again["event"], again["id"]) == ("UPDATE", alice["id"])
    got = m.get(alice["id"])
    assert got is not None and got["memory"] == "I am allergic to latex" and got["metadata"] == {"source": "chart"}
    assert [r["id"] for r in m.get_all(filters={"user_id": "alice"})["results"]] == [alice["id"]]
