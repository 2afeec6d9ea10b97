"""``ConsensusMemory`` against the real autogen-core package."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from autogen_core import CancellationToken
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from agentsensus import Store, embedders, judges
from agentsensus.integrations.autogen import ConsensusMemory

GHOST = "The ghost walks on the platform at midnight"


def text(s: str) -> MemoryContent:
    return MemoryContent(content=s, mime_type=MemoryMimeType.TEXT)


def test_two_agents_share_one_record(tmp_path: Any) -> None:
    async def run(store: Store) -> None:
        hamlet, horatio = ConsensusMemory(store, "Hamlet"), ConsensusMemory(store, "Horatio")
        assert isinstance(hamlet, Memory)
        await hamlet.add(text(GHOST))
        await hamlet.add(text("The king drinks deep tonight"))
        await horatio.add(text(GHOST))
        assert store.stats().shared == 1 and store.stats().records == 2
        found = await horatio.query("a ghost at midnight")
        assert [r.content for r in found.results] == [GHOST]
        meta = found.results[0].metadata
        assert meta is not None and meta["owners"] == ["Hamlet", "Horatio"] and meta["via"] == "hit"
        assert meta["score"] > 0
        # Recall never shows an agent what it does not own.
        assert [r.content for r in (await horatio.query("the king drinks")).results] == [GHOST]
        assert len((await hamlet.query("the king drinks", k=2)).results) == 2

    with Store(os.fspath(tmp_path / "s"), dim=384, embed=embedders.hash) as store:
        asyncio.run(run(store))


def test_update_context_adds_a_system_message(tmp_path: Any) -> None:
    async def run() -> None:
        mem = ConsensusMemory(os.fspath(tmp_path / "s"), "Hamlet")
        await mem.add(text(GHOST))
        ctx = BufferedChatCompletionContext(buffer_size=10)
        await ctx.add_message(UserMessage(content="What walks at midnight? The ghost?", source="user"))
        result = await mem.update_context(ctx)
        assert [m.content for m in result.memories.results] == [GHOST]
        messages = await ctx.get_messages()
        assert isinstance(messages[-1], SystemMessage) and GHOST in messages[-1].content
        empty = BufferedChatCompletionContext(buffer_size=10)
        assert (await mem.update_context(empty)).memories.results == []
        assert await empty.get_messages() == []
        await mem.close()
        assert mem.store.closed

    asyncio.run(run())


def test_dict_contents_split_statements_and_listing(tmp_path: Any) -> None:
    async def run() -> None:
        mem = ConsensusMemory(os.fspath(tmp_path / "s"), "Hamlet", split=lambda t: t.split(". "))
        await mem.add(text("Polonius hides. The arras moves. "))
        await mem.add(MemoryContent(content={"b": 1, "a": "x"}, mime_type=MemoryMimeType.JSON))
        listed = [r.content for r in (await mem.query("")).results]
        assert listed == ["Polonius hides", "The arras moves", '{"a": "x", "b": 1}']
        a, b = mem.store.owned("Hamlet")[:2]
        assert mem.store.neighbors(a) == [b]
        with pytest.raises(TypeError):
            await mem.add(MemoryContent(content=b"raw", mime_type=MemoryMimeType.BINARY))
        await mem.close()

    asyncio.run(run())


def test_clear_forgets_only_this_owners_share(tmp_path: Any) -> None:
    async def run(store: Store) -> None:
        hamlet, horatio = ConsensusMemory(store, "Hamlet"), ConsensusMemory(store, "Horatio")
        await hamlet.add(text(GHOST))
        await hamlet.add(text("To be or not to be"))
        await horatio.add(text(GHOST))
        await hamlet.clear()
        assert (await hamlet.query("")).results == []
        assert [r.content for r in (await horatio.query("ghost")).results] == [GHOST]
        assert store.stats().records == 1

    with Store(os.fspath(tmp_path / "s"), dim=384) as store:
        asyncio.run(run(store))


def test_a_cancelled_add_writes_nothing(tmp_path: Any) -> None:
    async def run(store: Store) -> None:
        mem = ConsensusMemory(store, "Hamlet")
        token = CancellationToken()
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await mem.add(text(GHOST), cancellation_token=token)
        assert store.stats().records == 0

    with Store(os.fspath(tmp_path / "s"), dim=384) as store:
        asyncio.run(run(store))


def test_the_store_judge_merges_paraphrases(tmp_path: Any) -> None:
    async def run(store: Store) -> None:
        await ConsensusMemory(store, "Hamlet").add(text(GHOST))
        await ConsensusMemory(store, "Horatio").add(text("At midnight the ghost walks on the platform"))
        assert store.stats().merges == 1

    with Store(os.fspath(tmp_path / "s"), dim=384, judge=judges.threshold(0.5), min_similarity=0.5) as store:
        asyncio.run(run(store))


def test_component_config_round_trip(tmp_path: Any) -> None:
    mem = ConsensusMemory(os.fspath(tmp_path / "s"), "Hamlet", k=3, expand=False)
    model = mem.dump_component()
    assert model.provider == "agentsensus.integrations.autogen.ConsensusMemory"
    assert model.config["owner"] == "Hamlet" and model.config["k"] == 3
    asyncio.run(mem.close())
    again = ConsensusMemory.load_component(model)
    assert (again.owner, again.k, again.expand, again.embed) == ("Hamlet", 3, False, embedders.hash)
    asyncio.run(again.close())
    custom = ConsensusMemory(os.fspath(tmp_path / "t"), "Hamlet", embed=embedders.HashEmbedder(384))
    with pytest.raises(ValueError):
        custom.dump_component()
    asyncio.run(custom.close())
