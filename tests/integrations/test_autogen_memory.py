"""``ConsensusMemory`` against the real autogen-core package."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from typing import Any

import pytest
from agentsensus import Store, embedders, judges
from agentsensus.integrations.autogen import ConsensusMemory
from autogen_core import CancellationToken
from autogen_core.memory import Memory, MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_contents_round_trip_with_their_mime_type(tmp_path: Any) -> None:
    async def run() -> None:
        mem = ConsensusMemory(os.fspath(tmp_path / "s"), "Hamlet", split=lambda t: t.split(". "))
        await mem.add(text("Polonius hides. The arras moves. "))
        await mem.add(MemoryContent(content={"b": 1, "a": "x"}, mime_type=MemoryMimeType.JSON))
        await mem.add(MemoryContent(content='{"c": [1, 2]}', mime_type=MemoryMimeType.JSON))
        await mem.add(MemoryContent(content="# Act *one*", mime_type=MemoryMimeType.MARKDOWN))
        await mem.add(text('{"looks":"like json"}'))  # not canonical JSON (no space): stays text
        listed = [(r.content, r.mime_type) for r in (await mem.query("")).results]
        assert listed == [
            ("Polonius hides", MemoryMimeType.TEXT),
            ("The arras moves", MemoryMimeType.TEXT),
            ({"a": "x", "b": 1}, MemoryMimeType.JSON),  # the dict again, with its MIME type; split never cuts JSON
            ({"c": [1, 2]}, MemoryMimeType.JSON),
            ("# Act *one*", MemoryMimeType.TEXT),  # a record keeps no MIME type: Markdown is text
            ('{"looks":"like json"}', MemoryMimeType.TEXT),
        ]
        (hit,) = (
            await mem.query(MemoryContent(content={"a": "x", "b": 1}, mime_type=MemoryMimeType.JSON), k=1)
        ).results
        assert hit.content == {"a": "x", "b": 1} and hit.mime_type == MemoryMimeType.JSON
        a, b = mem.store.owned("Hamlet")[:2]
        assert mem.store.neighbors(a) == [b]
        before = mem.store.stats().records
        for bad in [
            MemoryContent(content=b"raw", mime_type=MemoryMimeType.BINARY),
            MemoryContent(content="a picture", mime_type=MemoryMimeType.IMAGE),
            MemoryContent(content="x", mime_type="application/octet-stream"),
        ]:
            with pytest.raises(ValueError, match="Unsupported content type"):
                await mem.add(bad)
        with pytest.raises(ValueError, match="JSON content must be"):
            await mem.add(MemoryContent(content="[1, 2]", mime_type=MemoryMimeType.JSON))
        assert mem.store.stats().records == before  # refused, nothing written
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
    path = os.fspath(tmp_path / "s")
    mem = ConsensusMemory(
        path,
        "Hamlet",
        k=3,
        expand=False,
        judge=judges.threshold(0.6),
        min_similarity=0.55,
        candidates=3,
        exact_cutoff=16,
        merge_policy="keep_names",
        judge_sees_owners=True,
    )
    model = mem.dump_component()
    assert model.provider == "agentsensus.integrations.autogen.ConsensusMemory"
    c = model.config
    assert (c["owner"], c["k"], c["judge"], c["min_similarity"], c["candidates"]) == (
        "Hamlet",
        3,
        "threshold:0.6",
        0.55,
        3,
    )
    assert c["store_options"] == {
        "dim": 384,
        "exact_cutoff": 16,
        "merge_policy": "keep_names",
        "judge_sees_owners": True,
    }
    asyncio.run(mem.close())
    again = ConsensusMemory.load_component(model)
    assert (again.owner, again.k, again.expand, again.embed) == ("Hamlet", 3, False, embedders.hash)
    st = again.store
    assert (st.min_similarity, st.candidates, st.judge.__name__) == (0.55, 3, "threshold(0.6)")
    assert st.judge_sees_owners is True  # the store's disclosure setting survives the reload
    assert ConsensusMemory.load_component(again.dump_component()).dump_component() == again.dump_component()
    asyncio.run(again.close())
    for judge, spec in [
        (judges.exact, "exact"),
        (judges.never, "never"),
        (judges.llm("m", "http://127.0.0.1:9/v1"), "llm:m@http://127.0.0.1:9/v1"),
    ]:
        with Store(os.fspath(tmp_path / "t"), dim=384, judge=judge) as store:
            assert ConsensusMemory(store, "Hamlet").dump_component().config["judge"] == spec


def test_what_a_config_cannot_name_is_refused_at_dump(tmp_path: Any) -> None:
    def mine(requests: Any) -> list[Any]:
        return [None] * len(requests)

    cases = [
        ({"embed": embedders.HashEmbedder(384)}, "custom embed"),
        ({"judge": mine}, "the judge 'mine' has no spec"),
        ({"judge": judges.llm("m", "http://127.0.0.1:9/v1", on_error="raise")}, "on_error"),
        ({"split": str.split}, "custom split"),
        ({"merge_policy": lambda old, new: old}, "custom merge_policy"),
    ]
    for n, (options, message) in enumerate(cases):
        mem = ConsensusMemory(os.fspath(tmp_path / f"s{n}"), "Hamlet", **options)
        with pytest.raises(ValueError, match=message):
            mem.dump_component()
        asyncio.run(mem.close())


def test_loading_while_the_original_is_open_shares_its_store(tmp_path: Any) -> None:
    async def run() -> None:
        path = os.fspath(tmp_path / "s")
        first = ConsensusMemory(path, "Hamlet")
        await first.add(text(GHOST))
        second = ConsensusMemory.load_component(first.dump_component())
        assert second.store is first.store  # one open per process: shared, not opened twice
        assert [r.content for r in (await second.query("ghost")).results] == [GHOST]
        await first.close()
        assert not second.store.closed  # the last user closes it
        await second.add(text("The king drinks deep tonight"))
        await second.close()
        assert second.store.closed
        await second.close()  # again: nothing
        # A caller's open Store is found by path too, and stays the caller's.
        with Store(path) as store:
            mine = ConsensusMemory(store, "Horatio")
            loaded = ConsensusMemory.load_component(ConsensusMemory(path, "Hamlet").dump_component())
            assert loaded.store is store and mine.store is store
            await loaded.close()
            assert not store.closed
            with pytest.raises(ValueError, match="already open in this process with min_similarity"):
                ConsensusMemory(path, "Hamlet", min_similarity=0.1)

    asyncio.run(run())


def test_a_relative_path_is_released_after_a_chdir(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    mem = ConsensusMemory("relative", "Hamlet")
    twin = ConsensusMemory(os.fspath(tmp_path / "relative"), "Horatio")  # the same store by its absolute path
    assert twin.store is mem.store
    monkeypatch.chdir(tmp_path.parent)  # "relative" now names another directory
    asyncio.run(twin.close())
    asyncio.run(mem.close())
    assert mem.store.closed
    with Store(os.fspath(tmp_path / "relative")) as store:  # released: it opens again in this process
        assert store.stats().records == 0


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("abc", max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text("xyz", min_size=1, max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)
_contents = st.one_of(
    # Words joined by single spaces: the store merges texts that differ only in
    # case or spacing (the exact judge), which ListMemory keeps apart.
    st.lists(st.text("abcdefgh", min_size=1, max_size=5), min_size=1, max_size=3).map(lambda w: ("text", " ".join(w))),
    st.dictionaries(st.text("pqrs", min_size=1, max_size=3), _json_values, min_size=1, max_size=3).map(
        lambda d: ("json", d)
    ),
)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.lists(_contents, min_size=1, max_size=6, unique_by=lambda c: json.dumps(c[1], sort_keys=True)))
def test_contents_come_back_as_autogen_list_memory_gives_them(items: list[tuple[str, Any]]) -> None:
    """Distinct text and JSON contents listed back (``query("")``) equal what
    autogen's own ListMemory returns for them: same order, values and MIME types."""
    from autogen_core.memory import ListMemory

    async def run(path: str) -> None:
        ours, theirs = ConsensusMemory(path, "agent", sync=False), ListMemory()
        for kind, value in items:
            mime = MemoryMimeType.TEXT if kind == "text" else MemoryMimeType.JSON
            for memory in (ours, theirs):
                await memory.add(MemoryContent(content=value, mime_type=mime))
        got = [(r.content, r.mime_type) for r in (await ours.query("")).results]
        want = [(r.content, r.mime_type) for r in (await theirs.query("anything")).results]
        await ours.close()
        assert got == want

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(os.path.join(tmp, "s")))


DEPLOY = [
    "The deploy is on Friday at noon",
    "Lunch was pasta",
    "The deploy needs the database migrated first",
    "The deploy window is two hours",
]


def test_score_threshold_keeps_unrelated_memories_out_of_the_context(tmp_path: Any) -> None:
    async def context_after(mem: ConsensusMemory) -> tuple[list[Any], str]:
        ctx = BufferedChatCompletionContext(buffer_size=10)
        await ctx.add_message(UserMessage(content="When is the deploy?", source="user"))
        result = await mem.update_context(ctx)
        messages = await ctx.get_messages()
        assert isinstance(messages[-1], SystemMessage)
        return result.memories.results, messages[-1].content

    async def run(store: Store) -> None:
        everything = ConsensusMemory(store, "ops", k=4)
        for t in DEPLOY:
            await everything.add(text(t))
        # Without a threshold the k nearest are all injected, pasta (score 0) too.
        found, system = await context_after(everything)
        assert "Lunch was pasta" in system and len(found) == 4
        pasta = next(r for r in found if r.content == "Lunch was pasta")
        assert pasta.metadata is not None and pasta.metadata["score"] < 0.3
        relevant = ConsensusMemory(store, "ops", k=4, score_threshold=0.3)
        found, system = await context_after(relevant)
        assert "Lunch was pasta" not in system
        assert sorted(r.content for r in found) == sorted(t for t in DEPLOY if t != "Lunch was pasta")
        assert all(r.metadata is not None and r.metadata["score"] >= 0.3 for r in found)
        # Per call, either way.
        per_call = await everything.query("When is the deploy?", score_threshold=0.3)
        assert [r.content for r in per_call.results] == [r.content for r in found]
        assert len((await relevant.query("When is the deploy?", score_threshold=None)).results) == 4
        assert (await relevant.query("When is the deploy?", score_threshold=0.99)).results == []
        # A saved config keeps the threshold.
        again = ConsensusMemory.load_component(relevant.dump_component())
        assert again.score_threshold == 0.3
        await again.close()

    with Store(os.fspath(tmp_path / "s"), dim=384, embed=embedders.hash) as store:
        asyncio.run(run(store))


def test_unknown_keywords_raise_type_error_naming_them(tmp_path: Any) -> None:
    async def run() -> None:
        mem = ConsensusMemory(os.fspath(tmp_path / "s"), "ops")
        token = CancellationToken()
        await mem.add(text(DEPLOY[0]), cancellation_token=token)  # autogen's own keyword stays
        assert len((await mem.query("deploy", cancellation_token=token, k=1)).results) == 1
        with pytest.raises(TypeError, match="'limit'"):
            await mem.query("deploy", limit=3)
        with pytest.raises(TypeError, match="'metadata'"):
            await mem.add(text(DEPLOY[1]), metadata={"a": 1})  # type: ignore[call-arg]
        ctx = BufferedChatCompletionContext(buffer_size=10)
        with pytest.raises(TypeError, match="'k'"):
            await mem.update_context(ctx, k=2)  # type: ignore[call-arg]
        for bad in ("0.3", float("nan"), True):
            with pytest.raises(ValueError, match="score_threshold"):
                await mem.query("deploy", score_threshold=bad)
        with pytest.raises(ValueError, match="k must be"):
            await mem.query("deploy", k="2")
        assert mem.store.stats().records == 1  # the refused add wrote nothing
        await mem.close()

    asyncio.run(run())
    with pytest.raises(ValueError, match="score_threshold"):
        ConsensusMemory(os.fspath(tmp_path / "t"), "ops", score_threshold="high")  # type: ignore[arg-type]
