"""``ConsensusMemoryService`` under ADK's own ``Runner``: sessions from
``InMemorySessionService``, agents that are ``LlmAgent``s with ADK's
``load_memory`` tool and ``PreloadMemoryTool``, and a scripted ``BaseLlm``
in place of a model (no network). Every store is a real one on disk."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, Callable

import pytest
from agentsensus import Store, embedders, judges
from agentsensus.integrations.adk import ConsensusMemoryService, owner_name, scope_name
from google.adk.agents import LlmAgent, SequentialAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.tools import load_memory
from google.adk.tools.preload_memory_tool import PreloadMemoryTool
from google.genai import types

APP = "launch_desk"


class ScriptedModel(BaseLlm):
    """A model whose every turn is ``reply(request)``; it keeps the requests
    it was sent, so a test reads what ADK put into the prompt."""

    model: str = "scripted"
    reply: Callable[[LlmRequest], types.Content]
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield LlmResponse(content=self.reply(llm_request))


def says(text: str) -> Callable[[LlmRequest], types.Content]:
    return lambda _request: types.Content(role="model", parts=[types.Part(text=text)])


def request_text(request: LlmRequest) -> str:
    return "\n".join(p.text for c in request.contents for p in (c.parts or []) if p.text)


async def run_turn(
    runner: Runner, sessions: InMemorySessionService, user: str, text: str
) -> tuple[Session, list[Event]]:
    """One user message in a new session; the session as stored after it."""
    session = await sessions.create_session(app_name=runner.app_name, user_id=user)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    events = [e async for e in runner.run_async(user_id=user, session_id=session.id, new_message=message)]
    stored = await sessions.get_session(app_name=runner.app_name, user_id=user, session_id=session.id)
    assert stored is not None
    return stored, events


@pytest.fixture
def service(tmp_path: Any) -> Any:
    svc = ConsensusMemoryService(tmp_path / "memory", sync=False)
    yield svc
    svc.close()


# ADK 2.13 deprecates SequentialAgent for Workflow, which cannot yet hold LlmAgents.
@pytest.mark.filterwarnings("ignore:SequentialAgent is deprecated")
def test_two_agents_that_say_the_same_fact_share_one_record(service: ConsensusMemoryService) -> None:
    """A SequentialAgent's two LlmAgents both say the launch day; the root's
    after_agent_callback adds the session through ADK's own Context: one
    record, owned by both agents and the user."""

    async def remember(callback_context: CallbackContext) -> None:
        await callback_context.add_session_to_memory()

    scout = LlmAgent(name="scout", model=ScriptedModel(reply=says("The launch is on Friday.")))
    analyst = LlmAgent(name="analyst", model=ScriptedModel(reply=says("The launch is on Friday.")))
    root = SequentialAgent(name="crew", sub_agents=[scout, analyst], after_agent_callback=remember)
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=root, session_service=sessions, memory_service=service)

    session, _ = asyncio.run(run_turn(runner, sessions, "alice", "When do we launch?"))
    assert [e.author for e in session.events] == ["user", "scout", "analyst"]

    found = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="launch Friday"))
    launch = [m for m in found.memories if "Friday" in (m.content.parts or [types.Part()])[0].text]
    assert len(launch) == 1
    record = service.store.get(int(launch[0].id or "0"))
    assert record.owners == {owner_name(APP, "alice", a) for a in ("user", "scout", "analyst")}
    assert launch[0].custom_metadata["owners"] == ["analyst", "scout", "user"]
    assert service.store.scope_of(record.id) == scope_name(APP, "alice")
    assert service.store.stats().shared == 1


def test_agents_of_two_sessions_share_a_record_the_judge_merges(tmp_path: Any) -> None:
    """Two agents in two sessions of one app report the launch in their own
    words; the store's judge (a deterministic similarity threshold here)
    merges them into one record owned by both."""
    svc = ConsensusMemoryService(tmp_path / "memory", sync=False, judge=judges.threshold(0.6), min_similarity=0.5)
    try:
        sessions = InMemorySessionService()
        scout = LlmAgent(name="scout", model=ScriptedModel(reply=says("The launch is on Friday morning.")))
        analyst = LlmAgent(name="analyst", model=ScriptedModel(reply=says("The launch is on Friday.")))
        for agent in (scout, analyst):
            runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=svc)
            session, _ = asyncio.run(run_turn(runner, sessions, "alice", "When is it?"))
            asyncio.run(svc.add_session_to_memory(session))

        found = asyncio.run(svc.search_memory(app_name=APP, user_id="alice", query="launch"))
        assert len(found.memories) == 1
        owners = svc.store.get(int(found.memories[0].id or "0")).owners
        assert owners == {owner_name(APP, "alice", a) for a in ("user", "scout", "analyst")}
    finally:
        svc.close()


def test_load_memory_tool_reads_what_an_earlier_session_said(service: ConsensusMemoryService) -> None:
    """ADK's load_memory: the model calls it, ADK runs the search through the
    runner's memory service, and the model's answer quotes the memory."""
    sessions = InMemorySessionService()
    teller = LlmAgent(name="teller", model=ScriptedModel(reply=says("Noted.")))
    first = Runner(app_name=APP, agent=teller, session_service=sessions, memory_service=service)
    told, _ = asyncio.run(run_turn(first, sessions, "alice", "My locker code is 4512."))
    asyncio.run(service.add_session_to_memory(told))

    def recall(request: LlmRequest) -> types.Content:
        last = request.contents[-1].parts or []
        responses = [p.function_response for p in last if p.function_response]
        if not responses:  # first turn: ask the memory
            call = types.FunctionCall(name="load_memory", args={"query": "locker code"})
            return types.Content(role="model", parts=[types.Part(function_call=call)])
        # The tool's LoadMemoryResponse, as ADK hands it to the model (a model API serializes it).
        result = (responses[0].response or {})["result"]
        memories = result.model_dump()["memories"] if hasattr(result, "model_dump") else result["memories"]
        texts = [part["text"] for m in memories for part in m["content"]["parts"]]
        return types.Content(role="model", parts=[types.Part(text="You told me: " + " | ".join(texts))])

    model = ScriptedModel(reply=recall)
    helper = LlmAgent(name="helper", model=model, tools=[load_memory])
    second = Runner(app_name=APP, agent=helper, session_service=sessions, memory_service=service)
    _, events = asyncio.run(run_turn(second, sessions, "alice", "What is my locker code?"))

    assert "load_memory" in model.requests[0].tools_dict
    assert len(model.requests) == 2  # the call, then the answer with the function's response
    answer = [p.text for e in events if e.author == "helper" and e.content for p in e.content.parts or [] if p.text]
    assert answer == ["You told me: My locker code is 4512."]


def test_preload_memory_tool_puts_the_memory_into_the_prompt(service: ConsensusMemoryService) -> None:
    """ADK's PreloadMemoryTool searches with the user's message before the
    model runs and adds what it finds to the request."""
    sessions = InMemorySessionService()
    teller = LlmAgent(name="teller", model=ScriptedModel(reply=says("The launch is on Friday.")))
    first = Runner(app_name=APP, agent=teller, session_service=sessions, memory_service=service)
    told, _ = asyncio.run(run_turn(first, sessions, "alice", "Remind me when we launch."))
    asyncio.run(service.add_session_to_memory(told))

    model = ScriptedModel(reply=says("Friday."))
    helper = LlmAgent(name="helper", model=model, tools=[PreloadMemoryTool()])
    second = Runner(app_name=APP, agent=helper, session_service=sessions, memory_service=service)
    asyncio.run(run_turn(second, sessions, "alice", "When is the launch?"))

    prompt = request_text(model.requests[0])
    assert "<PAST_CONVERSATIONS>" in prompt
    assert "teller: The launch is on Friday." in prompt


def test_one_user_never_sees_another_users_memories(service: ConsensusMemoryService) -> None:
    """Bob's search, his preloaded prompt and his deletes never reach what
    Alice's sessions hold, even where the two said the same words."""
    sessions = InMemorySessionService()
    teller = LlmAgent(name="teller", model=ScriptedModel(reply=says("Noted.")))
    runner = Runner(app_name=APP, agent=teller, session_service=sessions, memory_service=service)
    alice, _ = asyncio.run(run_turn(runner, sessions, "alice", "My locker code is 4512."))
    asyncio.run(service.add_session_to_memory(alice))
    bob, _ = asyncio.run(run_turn(runner, sessions, "bob", "Noted."))
    asyncio.run(service.add_session_to_memory(bob))

    assert asyncio.run(service.search_memory(app_name=APP, user_id="bob", query="locker code 4512")).memories == []
    bobs = asyncio.run(service.search_memory(app_name=APP, user_id="bob", query="Noted"))
    # The same words in two users' sessions are two records, one per user.
    alices = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="Noted"))
    assert len(bobs.memories) == 1 and len(alices.memories) == 1
    assert bobs.memories[0].id != alices.memories[0].id
    assert bobs.memories[0].custom_metadata["owners"] == ["teller", "user"]

    model = ScriptedModel(reply=says("I do not know."))
    helper = LlmAgent(name="helper", model=model, tools=[PreloadMemoryTool()])
    as_bob = Runner(app_name=APP, agent=helper, session_service=sessions, memory_service=service)
    asyncio.run(run_turn(as_bob, sessions, "bob", "What is the locker code?"))
    assert "4512" not in request_text(model.requests[0])

    secret = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="locker code"))
    assert [m.content.parts[0].text for m in secret.memories if m.content.parts] == ["My locker code is 4512."]
    asyncio.run(service.delete_memory(app_name=APP, user_id="bob", memory_id=secret.memories[0].id))
    again = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="locker code"))
    assert [m.id for m in again.memories] == [secret.memories[0].id]
    # Another app of the same store is another scope: its user of the same id sees nothing.
    assert asyncio.run(service.search_memory(app_name="other_app", user_id="alice", query="locker")).memories == []


def test_a_session_added_again_writes_only_its_new_events(service: ConsensusMemoryService) -> None:
    """ADK adds a session many times as it grows: each event is deposited
    once, and a deleted memory is not written back by the next add."""
    sessions = InMemorySessionService()
    teller = LlmAgent(name="teller", model=ScriptedModel(reply=says("Noted.")))
    runner = Runner(app_name=APP, agent=teller, session_service=sessions, memory_service=service)
    session, _ = asyncio.run(run_turn(runner, sessions, "alice", "I prefer jasmine tea."))
    asyncio.run(service.add_session_to_memory(session))
    deposits = service.store.stats().deposits
    asyncio.run(service.add_session_to_memory(session))
    assert service.store.stats().deposits == deposits

    tea = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="jasmine"))
    asyncio.run(service.delete_memory(app_name=APP, user_id="alice", memory_id=tea.memories[0].id))
    assert asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="jasmine")).memories == []
    asyncio.run(service.add_session_to_memory(session))
    assert asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="jasmine")).memories == []


def test_add_memory_and_its_metadata(service: ConsensusMemoryService) -> None:
    """Direct writes (ADK's add_memory): the entry's author and metadata come back."""
    from google.adk.memory.memory_entry import MemoryEntry

    entry = MemoryEntry(
        content=types.Content(parts=[types.Part(text="Alice's badge is blue.")]),
        author="receptionist",
        timestamp="2026-01-02T03:04:05",
        custom_metadata={"source": "front desk"},
    )
    asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[entry]))
    got = asyncio.run(service.search_memory(app_name=APP, user_id="alice", query="badge"))
    assert len(got.memories) == 1
    m = got.memories[0]
    assert (m.author, m.timestamp) == ("receptionist", "2026-01-02T03:04:05")
    assert m.custom_metadata["custom_metadata"] == {"source": "front desk"}
    assert m.custom_metadata["owners"] == ["receptionist", "user"]
    empty = MemoryEntry(content=types.Content(parts=[]))
    with pytest.raises(ValueError, match=r"memories\[0\] has no text"):
        asyncio.run(service.add_memory(app_name=APP, user_id="alice", memories=[empty]))


def test_bad_input_is_refused_in_one_line_with_nothing_written(service: ConsensusMemoryService, tmp_path: Any) -> None:
    before = service.store.stats()
    long_session = Session(app_name="a" * 300, user_id="alice", id="s", events=[])
    with pytest.raises(ValueError, match="over 255: use shorter ids"):
        asyncio.run(service.add_session_to_memory(long_session))
    with pytest.raises(ValueError, match="user_id must be a non-empty str"):
        asyncio.run(service.search_memory(app_name=APP, user_id="", query="x"))
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        ConsensusMemoryService(tmp_path / "other", k=0)
    with Store(tmp_path / "bare", dim=8) as bare:
        with pytest.raises(TypeError, match="the store has no embed"):
            ConsensusMemoryService(bare)
    assert service.store.stats() == before


def test_a_store_given_open_is_shared_and_left_open(tmp_path: Any) -> None:
    """Two services on one open Store (two apps of one process) see one
    store; closing a service leaves the caller's Store open."""
    with Store(tmp_path / "memory", embed=embedders.hash, sync=False) as store:
        one, two = ConsensusMemoryService(store), ConsensusMemoryService(store)
        event = Event(author="user", content=types.Content(parts=[types.Part(text="The launch is on Friday.")]))
        asyncio.run(one.add_events_to_memory(app_name=APP, user_id="alice", events=[event], session_id="s"))
        found = asyncio.run(two.search_memory(app_name=APP, user_id="alice", query="launch"))
        assert [m.author for m in found.memories] == ["user"]
        one.close()
        two.close()
        assert not store.closed
