"""CrewAI's own flow on the consensus store: crews of two agents with memory
on (``Crew(memory=True)``, the backend plugged in through CrewAI's storage
factory), a scripted LLM and a deterministic embedder, no network."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from agentsensus.integrations import crewai as adapter
from agentsensus.integrations.crewai import ConsensusStorage, acting_as
from agentsensus.integrations.crewai_views import OWNERS_KEY
from crewai import Agent, Crew, Task
from crewai.memory.analyze import ConsolidationAction, ConsolidationPlan
from crewai.memory.unified_memory import Memory
from fakes import EMBEDDER, HashEmbedding, ScriptedLLM

FACT = "The launch moved to May 3."


def _crew(name: str, llm: ScriptedLLM) -> Crew:
    researcher = Agent(role="Researcher", goal="find the launch date", backstory="Reads the wires.", llm=llm)
    writer = Agent(role="Writer", goal="report the launch date", backstory="Writes the bulletin.", llm=llm)
    tasks = [
        Task(description="When is the launch?", expected_output="the date", agent=researcher),
        Task(description="Write the launch date in the bulletin.", expected_output="the date", agent=writer),
    ]
    return Crew(name=name, agents=[researcher, writer], tasks=tasks, memory=True, embedder=EMBEDDER)


def _storage(crew: Crew) -> ConsensusStorage:
    memory = crew._memory
    assert memory is not None
    memory.drain_writes()
    storage = memory._storage
    assert isinstance(storage, ConsensusStorage)
    return storage


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[str]:
    path = str(tmp_path / "memory")
    adapter.install(path)
    yield path
    adapter.uninstall()


def _close(*crews: Crew) -> None:
    for crew in crews:
        if crew._memory is not None:
            crew._memory.close()


def test_two_agents_of_a_crew_saving_one_event_share_one_record(store_path: str) -> None:
    llm = ScriptedLLM(model="scripted", facts=[FACT], answer=FACT)
    crew = _crew("Launch desk", llm)
    crew.kickoff()
    storage = _storage(crew)
    try:
        assert storage.store is not None
        (record,) = list(storage.store.records())
        assert record.text == FACT
        assert record.owners == {"researcher", "writer"}
        # Each agent's save is its own CrewAI record of it, in its own scope.
        for role in ("researcher", "writer"):
            (mine,) = storage.list_records(f"/crew/launch-desk/agent/{role}")
            assert mine.scope == f"/crew/launch-desk/agent/{role}/launch"
            assert mine.categories == ["schedule"]
        # The crew's recall sees the event once, with both owners.
        assert crew._memory is not None
        matches = crew._memory.recall("launch date", depth="shallow")
        assert [m.record.content for m in matches] == [FACT]
        assert matches[0].record.metadata[OWNERS_KEY] == ["researcher", "writer"]
        assert storage.count("/crew/launch-desk") == 1
    finally:
        _close(crew)


def test_crews_with_different_root_scopes_never_share_nor_see_each_other(store_path: str) -> None:
    llm = ScriptedLLM(model="scripted", facts=[FACT], answer=FACT)
    launch, press = _crew("Launch desk", llm), _crew("Press desk", llm)
    launch.kickoff()
    press.kickoff()
    storage = _storage(launch)
    _storage(press)
    try:
        assert storage.store is not None
        records = list(storage.store.records())
        assert len(records) == 2  # the same words, one record per crew
        assert all(r.owners == {"researcher", "writer"} for r in records)
        assert {storage.store.scope_of(r.id) for r in records} == {"/crew/launch-desk", "/crew/press-desk"}
        for crew, root in ((launch, "/crew/launch-desk"), (press, "/crew/press-desk")):
            assert crew._memory is not None
            matches = crew._memory.recall("launch date", depth="shallow")
            assert len(matches) == 1
            assert matches[0].record.scope.startswith(root + "/")
    finally:
        _close(launch, press)


def test_one_agent_forgetting_leaves_the_record_to_the_other(store_path: str) -> None:
    llm = ScriptedLLM(model="scripted", facts=[FACT], answer=FACT)
    crew = _crew("Launch desk", llm)
    crew.kickoff()
    storage = _storage(crew)
    try:
        assert storage.store is not None and crew._memory is not None
        (researchers,) = storage.list_records("/crew/launch-desk/agent/researcher")
        (writers,) = storage.list_records("/crew/launch-desk/agent/writer")
        assert crew._memory.forget(record_ids=[researchers.id]) == 1
        (record,) = list(storage.store.records())
        assert record.owners == {"writer"} and record.text == FACT
        assert storage.get_record(researchers.id) is None
        kept = storage.get_record(writers.id)
        assert kept is not None and kept.content == FACT and OWNERS_KEY not in kept.metadata
        assert crew._memory.forget(record_ids=[writers.id]) == 1
        assert list(storage.store.records()) == []
    finally:
        _close(crew)


def _shared_desk(tmp_path: Path, llm: ScriptedLLM) -> Memory:
    """One Memory two agents use without agent scopes: each names itself as
    ``source``, as a flow's steps might."""
    return Memory(storage=ConsensusStorage(str(tmp_path / "desk")), llm=llm, embedder=HashEmbedding())


def _analysis_llm(memory: Memory) -> ScriptedLLM:
    """The copy of the LLM that Memory analyses with (it copies the one given)."""
    llm = memory._llm
    assert isinstance(llm, ScriptedLLM)
    return llm


def _update_plan(record_id: str, content: str) -> ConsolidationPlan:
    action = ConsolidationAction(action="update", record_id=record_id, new_content=content)
    return ConsolidationPlan(actions=[action], insert_new=False)


def test_consolidation_update_of_another_agents_record_acting_as_adds_an_owner(tmp_path: Path) -> None:
    """CrewAI's consolidation turns the writer's save of the same event into
    an update of the researcher's record (no insert). Acting as the writer,
    the update joins the writer to the record; the researcher's words stay."""
    llm = ScriptedLLM(model="scripted")
    memory = _shared_desk(tmp_path, llm)
    try:
        first = memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="researcher")
        assert first is not None
        _analysis_llm(memory).plan = _update_plan(first.id, FACT)
        with acting_as("writer"):
            memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="writer")
        storage = memory._storage
        assert isinstance(storage, ConsensusStorage) and storage.store is not None
        (record,) = list(storage.store.records())
        assert record.owners == {"researcher", "writer"} and record.text == FACT
        mine = storage.get_record(first.id)
        assert mine is not None and mine.source == "researcher" and mine.content == FACT
        assert mine.metadata[OWNERS_KEY] == ["researcher", "writer"]
    finally:
        memory.close()


def test_consolidation_update_with_new_words_acting_as_leaves_the_first_agents_words(tmp_path: Path) -> None:
    llm = ScriptedLLM(model="scripted")
    memory = _shared_desk(tmp_path, llm)
    try:
        first = memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="researcher")
        assert first is not None
        _analysis_llm(memory).plan = _update_plan(first.id, "The launch moved to May 3, at 9:00.")
        with acting_as("writer"):
            memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="writer")
        storage = memory._storage
        assert isinstance(storage, ConsensusStorage) and storage.store is not None
        by_text = {r.text: r.owners for r in storage.store.records()}
        assert by_text == {FACT: {"researcher"}, "The launch moved to May 3, at 9:00.": {"writer"}}
        mine = storage.get_record(first.id)
        assert mine is not None and mine.content == FACT
    finally:
        memory.close()


def test_consolidation_update_without_an_acting_owner_rewrites_the_ids_owner(tmp_path: Path) -> None:
    """Without :func:`acting_as`, an update carries no updater (CrewAI's
    update record has the first record's fields): it acts as the owner its
    id names, as CrewAI's own storages replace the row."""
    llm = ScriptedLLM(model="scripted")
    memory = _shared_desk(tmp_path, llm)
    try:
        first = memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="researcher")
        assert first is not None
        _analysis_llm(memory).plan = _update_plan(first.id, "The launch moved to May 3, at 9:00.")
        memory.remember(FACT, scope="/desk", categories=[], importance=0.5, source="writer")
        storage = memory._storage
        assert isinstance(storage, ConsensusStorage) and storage.store is not None
        (record,) = list(storage.store.records())
        assert record.owners == {"researcher"} and record.text == "The launch moved to May 3, at 9:00."
        mine = storage.get_record(first.id)
        assert mine is not None and mine.content == record.text
    finally:
        memory.close()


def test_update_of_a_shared_record_keeps_the_other_owners_words(store_path: str) -> None:
    llm = ScriptedLLM(model="scripted", facts=[FACT], answer=FACT)
    crew = _crew("Launch desk", llm)
    crew.kickoff()
    storage = _storage(crew)
    try:
        assert storage.store is not None and crew._memory is not None
        (writers,) = storage.list_records("/crew/launch-desk/agent/writer")
        crew._memory.update(writers.id, content="The launch moved to May 4.")
        by_text = {r.text: r.owners for r in storage.store.records()}
        assert by_text == {FACT: {"researcher"}, "The launch moved to May 4.": {"writer"}}
        got = storage.get_record(writers.id)
        assert got is not None and got.content == "The launch moved to May 4."
        assert got.scope == "/crew/launch-desk/agent/writer/launch"
    finally:
        _close(crew)


def test_the_factory_answers_its_specs_and_leaves_the_rest_to_crewai(tmp_path: Path) -> None:
    from crewai.memory.storage.lancedb_storage import LanceDBStorage

    adapter.install(str(tmp_path / "default"))
    try:
        made = [
            Memory(embedder=HashEmbedding()),  # CrewAI's default spec, "lancedb"
            Memory(storage=f"{adapter.SPEC_PREFIX}{tmp_path / 'named'}", embedder=HashEmbedding()),
        ]
        storages = [m._storage for m in made]
        assert all(isinstance(s, ConsensusStorage) for s in storages)
        for m, where in zip(made, ("default", "named")):
            m.remember(FACT, scope="/desk", categories=[], importance=0.5)
            assert (tmp_path / where / "data.mdb").exists()
        lance = Memory(storage=str(tmp_path / "lance"), embedder=HashEmbedding())
        assert isinstance(lance._storage, LanceDBStorage)
        for m in made:
            m.close()
    finally:
        adapter.uninstall()
