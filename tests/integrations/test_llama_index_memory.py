"""``ConsensusMemoryBlock`` inside the real llama-index-core ``Memory``:
messages go in with ``Memory.aput``/``put``, the memory flushes them into
the block when its queue passes the token limit, and ``Memory.get``/``aget``
shows what the block recalls. No test reaches the network: the guard below
refuses every connection that is not to this machine."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from typing import Any, Iterator, Optional

import llama_index.core
import llama_index.core.storage.chat_store.sql as sql_chat_store
import pytest
from agentsensus import Store, embedders
from agentsensus.integrations import open_stores
from agentsensus.integrations.llama_index import ConsensusMemoryBlock
from agentsensus.judges import JudgeRequest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.sql import MessageStatus

LAUNCH = "The launch moved to Friday."


def words(text: str) -> list[str]:
    """A tokenizer that counts words, so the tests can say when a flush happens."""
    return text.split()


def memory(block: ConsensusMemoryBlock, session: str, **options: Any) -> Memory:
    """A Memory whose chat history holds about 20 words: a few more flush the oldest."""
    settings: dict[str, Any] = {"token_limit": 40, "token_flush_size": 10, "chat_history_token_ratio": 0.5}
    settings.update(options)
    return Memory.from_defaults(session_id=session, memory_blocks=[block], tokenizer_fn=words, **settings)


async def talk(m: Memory, *turns: str) -> None:
    """Puts ``turns`` as alternating user and assistant messages."""
    for n, text in enumerate(turns):
        await m.aput(ChatMessage(role="user" if n % 2 == 0 else "assistant", content=text))


def filler(who: str) -> tuple[str, ...]:
    """Three more turns of ``who``'s own, enough to flush what came before them."""
    return (
        f"Please keep this in mind for the next planning meeting, {who}",
        f"Sure, {who}, I will keep it in mind for the meeting of the team",
        f"Thanks, that is all for now, {who}, talk to you again tomorrow",
    )


def memory_text(messages: list[ChatMessage]) -> str:
    """The text of the system message Memory builds from its blocks ('' when none)."""
    system = [m for m in messages if m.role.value == "system"]
    assert len(system) <= 1
    return "" if not system else "\n".join(b.text for b in system[0].blocks if hasattr(b, "text"))


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuses connections to anything but this machine (an AF_UNIX socket
    or the loopback), and makes LlamaIndex load its default tokenizer anew
    under that guard."""
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX or (isinstance(address, tuple) and address[0] in ("127.0.0.1", "::1")):
            return real(self, address)
        raise OSError(f"test tried to reach {address!r}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)
    yield


@pytest.fixture(autouse=True)
def chat_stores_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Closes the SQL engines Memory's chat store opens (an aiosqlite
    connection with a thread of its own) when the test ends: left to the
    garbage collector, they close after their event loop has, and warn."""
    engines: list[Any] = []
    real = sql_chat_store.create_async_engine

    def opened(*args: Any, **kwargs: Any) -> Any:
        engine = real(*args, **kwargs)
        engines.append(engine)
        return engine

    monkeypatch.setattr(sql_chat_store, "create_async_engine", opened)
    yield
    for engine in engines:
        asyncio.run(engine.dispose())


@pytest.fixture
def store(tmp_path: Any) -> Iterator[Store]:
    with Store(os.fspath(tmp_path / "s"), dim=384, embed=embedders.hash) as s:
        yield s


def test_flushed_messages_come_back_through_memory_get(store: Store) -> None:
    block = ConsensusMemoryBlock(store, "alice")
    m = memory(block, "alice-1")

    asyncio.run(talk(m, LAUNCH, "Noted, Friday it is.", *filler("Alice")))

    archived = asyncio.run(m.aget_all(status=MessageStatus.ARCHIVED))
    assert LAUNCH in [a.content for a in archived]  # the memory flushed it out of its chat history...
    assert store.stats().records >= 2
    got = m.get(input="When is the launch?")
    assert LAUNCH not in [x.content for x in got if x.role.value != "system"]
    text = memory_text(got)  # ...and the block brings it back, inside Memory's own template
    assert "<consensus_memory>" in text and f"- {LAUNCH}" in text
    assert text.index(LAUNCH) < text.index("Noted, Friday it is.")  # the closer one first


def test_two_agents_flushing_one_event_share_one_record(store: Store) -> None:
    alice = memory(ConsensusMemoryBlock(store, "alice"), "a")
    bob = memory(ConsensusMemoryBlock(store, "bob"), "b")

    async def run() -> None:
        await talk(alice, LAUNCH, "Noted, Friday it is.", *filler("Alice"))
        # Bob hears the same event in other spacing and case: the judge (exact,
        # on normalized text) makes it the same record.
        await talk(bob, "the launch  moved to FRIDAY.", "Got it, I will tell the designers.", *filler("Bob"))

    asyncio.run(run())
    shared = [r for r in store.records() if len(r.owners) == 2]
    assert [(r.text, sorted(r.owners)) for r in shared] == [(LAUNCH, ["alice", "bob"])]
    assert store.stats().shared == 1
    for m in (alice, bob):
        assert f"- {LAUNCH}" in memory_text(m.get(input="When is the launch?"))


def test_a_judge_merges_two_agents_wordings(store: Store) -> None:
    """The store's judge decides what is one fact: this deterministic one
    merges any two statements naming the launch and Friday."""

    def launch_judge(requests: list[JudgeRequest]) -> list[Optional[int]]:
        def key(text: str) -> bool:
            return "launch" in text.lower() and "friday" in text.lower()

        return [next((c.id for c in r.candidates if key(r.statement) and key(c.text)), None) for r in requests]

    alice = memory(ConsensusMemoryBlock(store, "alice"), "a")
    bob = memory(ConsensusMemoryBlock(store, "bob"), "b")
    store.judge, store.min_similarity = launch_judge, 0.1
    asyncio.run(talk(alice, LAUNCH, "Noted.", *filler("Alice")))
    asyncio.run(talk(bob, "Launch is now on Friday, the lead says.", "Noted.", *filler("Bob")))
    (record,) = [r for r in store.records() if "launch" in r.text.lower()]
    assert record.owners == frozenset({"alice", "bob"})


def test_an_agent_never_recalls_what_only_another_owns(store: Store) -> None:
    secret = "The vault code is 4512 and only alice knows it"
    alice = memory(ConsensusMemoryBlock(store, "alice"), "a")
    bob_block = ConsensusMemoryBlock(store, "bob")
    bob = memory(bob_block, "b")
    asyncio.run(talk(alice, secret, "I will not tell anyone the code.", *filler("Alice")))
    asyncio.run(talk(bob, "The cafeteria closes at three on Fridays.", "Good to know.", *filler("Bob")))
    assert any(secret == r.text for r in store.records())

    assert secret in memory_text(alice.get(input=secret))
    seen = memory_text(bob.get(input=secret))
    assert "vault" not in seen and "cafeteria" in seen  # bob recalls, but only his own
    query = [ChatMessage(role="user", content="What is the vault code?")]
    assert "vault" not in asyncio.run(bob_block.aget(query))
    assert all("vault" not in r.text for r in store.recall("bob", "the vault code", k=50))


def test_one_flush_is_one_deposit_of_linked_statements(store: Store) -> None:
    block = ConsensusMemoryBlock(store, "alice")
    flushed = [
        ChatMessage(role="system", content="You are a planner."),
        ChatMessage(role="user", content=LAUNCH),
        ChatMessage(role="assistant", content="Noted, Friday it is."),
        ChatMessage(role="user", content=LAUNCH),
        ChatMessage(role="tool", content="calendar: Friday 10:00 launch review"),
    ]
    asyncio.run(block.aput(flushed, from_short_term_memory=True, session_id="s1"))
    records = {r.text: r.id for r in store.records()}
    assert sorted(records) == sorted([LAUNCH, "Noted, Friday it is.", "calendar: Friday 10:00 launch review"])
    stats = store.stats()
    assert (stats.deposits, stats.merges) == (1, 0)  # the repeat counted once, the system message not at all
    assert set(store.neighbors(records[LAUNCH])) == {i for t, i in records.items() if t != LAUNCH}


def test_a_block_that_refuses_short_term_memory_gets_no_flush(store: Store) -> None:
    m = memory(ConsensusMemoryBlock(store, "alice", accept_short_term_memory=False), "a")
    asyncio.run(talk(m, LAUNCH, "Noted.", *filler("Alice")))
    assert asyncio.run(m.aget_all(status=MessageStatus.ARCHIVED))  # it flushed...
    assert store.stats().records == 0  # ...and the block took none of it


def test_k_threshold_and_expand_shape_the_recall(store: Store) -> None:
    facts = ["The launch moved to Friday", "The launch venue is the old theatre", "Cats sleep most of the day"]
    asyncio.run(ConsensusMemoryBlock(store, "alice").aput([ChatMessage(role="user", content=f) for f in facts]))
    question = "Did the launch move to Friday?"
    query = [ChatMessage(role="user", content=question)]

    def lines(**options: Any) -> list[str]:
        text = asyncio.run(ConsensusMemoryBlock(store, "alice", **options).aget(query))
        return [x[2:] for x in text.split("\n")[1:]]

    ranked = store.recall("alice", question, k=3, expand=False)
    assert [r.text for r in ranked][0] == facts[0] and ranked[1].score > ranked[2].score
    assert len(lines()) == 3 and lines(k=1)[0] == facts[0]  # a hit, then what its deposit linked it to
    assert lines(k=1, expand=False) == [facts[0]]
    assert lines(threshold=ranked[1].score, expand=False) == [r.text for r in ranked[:2]]
    assert lines(threshold=1.01) == []


def test_truncation_drops_the_least_relevant_lines_first(store: Store) -> None:
    block = ConsensusMemoryBlock(store, "alice", priority=1, expand=False)
    facts = [f"Fact number {n} about the launch plan, with some more words" for n in range(8)]
    asyncio.run(block.aput([ChatMessage(role="user", content=f) for f in facts]))
    full = asyncio.run(block.aget([ChatMessage(role="user", content="the launch plan")]))
    assert len(full.split("\n")) == 1 + 5

    cut = asyncio.run(block.atruncate(full, 20))
    assert cut is not None and full.startswith(cut) and 1 < len(cut.split("\n")) < 6
    assert asyncio.run(block.atruncate(full, 10_000)) is None

    # Through Memory: a limit the full block overflows keeps the best lines,
    # whether Memory counts words or tiktoken's tokens (its default).
    for tokenizer in (words, None):
        m = Memory.from_defaults(memory_blocks=[block], tokenizer_fn=tokenizer, token_limit=40, token_flush_size=10)
        asyncio.run(m.aput(ChatMessage(role="user", content="the launch plan")))
        text = memory_text(m.get())
        kept = [x for x in text.split("\n") if x.startswith("- ")]
        assert 0 < len(kept) < 5 and full.split("\n")[1] in text, tokenizer


def test_a_record_of_several_lines_is_one_line_of_the_block(store: Store) -> None:
    block = ConsensusMemoryBlock(store, "alice", priority=1, expand=False)
    plan = "The plan:\n1. launch on Friday\n2. review on Monday"
    asyncio.run(block.aput([ChatMessage(role="assistant", content=plan), ChatMessage(role="user", content="ok")]))
    assert [r.text for r in store.records()][0] == plan  # stored as said
    text = asyncio.run(block.aget([ChatMessage(role="user", content="the plan for the launch")]))
    assert "- The plan: 1. launch on Friday 2. review on Monday" in text.split("\n")
    shorter = asyncio.run(block.atruncate(text, 1))
    assert shorter == text.split("\n")[0] + "\n- The plan: 1. launch on Friday 2. review on Monday"


def test_a_path_opens_one_store_per_process(tmp_path: Any) -> None:
    path = os.fspath(tmp_path / "s")
    a, b = ConsensusMemoryBlock(path, "alice"), ConsensusMemoryBlock(path, "bob")
    assert a.store is b.store and a.embed is embedders.hash
    asyncio.run(a.aput([ChatMessage(role="user", content=LAUNCH)]))
    asyncio.run(b.aput([ChatMessage(role="user", content=LAUNCH)]))
    assert [sorted(r.owners) for r in a.store.records()] == [["alice", "bob"]]
    a.close()
    a.close()
    assert not b.store.closed
    b.close()
    assert b.store.closed and open_stores.key_of(path) not in open_stores._opened


def test_a_lent_store_stays_open_after_close(store: Store) -> None:
    block = ConsensusMemoryBlock(store, "alice")
    asyncio.run(block.aput([ChatMessage(role="user", content=LAUNCH)]))
    block.close()
    assert not store.closed and store.stats().records == 1


@pytest.mark.parametrize(
    "args, options, error, message",
    [
        (("alice",), {"owner": ""}, ValueError, "owner must be a non-empty name"),
        (("alice",), {"owner": 7}, TypeError, "owner must be a str, got int"),
        (("alice",), {"owner": "al\u200bice"}, ValueError, "owner has a format character"),
        (("alice",), {"k": 0}, ValueError, "k must be an int >= 1"),
        (("alice",), {"k": True}, ValueError, "k must be an int >= 1"),
        (("alice",), {"threshold": "high"}, ValueError, "threshold must be a number or None"),
        (("alice",), {"threshold": float("nan")}, ValueError, "threshold must be a number or None"),
        (("alice",), {"embed": "hash"}, TypeError, "embed must be a callable"),
        (("alice",), {"dim": 384}, TypeError, "store_options apply only when store is a path"),
    ],
)
def test_bad_arguments_raise_one_line_errors(
    store: Store, args: tuple[str, ...], options: dict[str, Any], error: type[Exception], message: str
) -> None:
    owner = options.pop("owner", args[0])
    with pytest.raises(error, match=message):
        ConsensusMemoryBlock(store, owner, **options)
    assert store.stats().records == 0


def test_a_bad_store_is_refused_and_nothing_is_written(tmp_path: Any) -> None:
    with pytest.raises(TypeError, match="store must be a Store or a path, got int"):
        ConsensusMemoryBlock(3, "alice")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be an int"):
        ConsensusMemoryBlock(os.fspath(tmp_path / "never"), "alice", k=0)
    assert not (tmp_path / "never").exists()


def test_the_default_tokenizer_loads_without_the_network(store: Store) -> None:
    """LlamaIndex's default tokenizer is tiktoken's, whose encodings
    llama-index-core ships: a Memory made without ``tokenizer_fn`` loads it
    (anew, under the guard) and flushes by it."""
    m = Memory.from_defaults(
        memory_blocks=[ConsensusMemoryBlock(store, "alice")],
        token_limit=40,
        token_flush_size=10,
        chat_history_token_ratio=0.5,
    )
    assert llama_index.core.global_tokenizer is not None
    asyncio.run(talk(m, LAUNCH, "Noted.", *filler("Alice")))
    assert f"- {LAUNCH}" in memory_text(m.get(input="When is the launch?"))


def test_importing_agentsensus_does_not_import_llama_index() -> None:
    code = "import sys, agentsensus, agentsensus.integrations; print('llama_index' in sys.modules)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "False"


# -- LlamaIndex's own memory-block tests, with this block in them ---------------------------
#
# llama-index-core's sdist ships no tests, so its suite cannot be fetched from
# PyPI and run unchanged as LangGraph's and autogen's are (upstream.py). These
# re-state, with ConsensusMemoryBlock constructed where the upstream test
# constructs its own block, the tests of llama-index-core's
# tests/memory/test_memory_blocks_base.py and tests/memory/blocks/test_vector.py
# that are about a block; tests/integrations/README.md lists them and the ones
# left out.


def upstream_memory(*blocks: Any, **options: Any) -> Memory:
    """The Memory of the upstream fixture ``memory_with_blocks``."""
    settings: dict[str, Any] = {"token_limit": 1000, "token_flush_size": 700, "chat_history_token_ratio": 0.9}
    settings.update(options)
    return Memory(session_id="test_blocks", memory_blocks=list(blocks), tokenizer_fn=words, **settings)


def paris(store: Store, **options: Any) -> ConsensusMemoryBlock:
    """A block holding upstream's history of capitals."""
    block = ConsensusMemoryBlock(store, "alice", **options)
    history = [
        ("user", "What's the capital of France?"),
        ("assistant", "The capital of France is Paris."),
        ("user", "What about Germany?"),
        ("assistant", "The capital of Germany is Berlin."),
    ]
    asyncio.run(block.aput([ChatMessage(role=r, content=t) for r, t in history]))
    return block


def test_upstream_text_memory_block(store: Store) -> None:
    """test_memory_blocks_base.py::test_text_memory_block: a block's text
    becomes one TextBlock under the block's name."""
    m = upstream_memory(paris(store, name="text_block", priority=1))
    question = [ChatMessage(role="user", content="Tell me about Paris.")]
    content = asyncio.run(m._get_memory_blocks_content(question))
    assert list(content) == ["text_block"] and "The capital of France is Paris." in content["text_block"]
    formatted, chat = asyncio.run(m._format_memory_blocks({"text_block": content["text_block"]}))
    assert chat == [] and len(formatted) == 1
    name, blocks = formatted[0]
    assert name == "text_block" and [b.text for b in blocks] == [content["text_block"]]  # type: ignore[union-attr]


def test_upstream_memory_with_all_block_types(store: Store) -> None:
    """test_memory_blocks_base.py::test_memory_with_all_block_types: beside
    other blocks, Memory.aget puts every block's content in one system message."""
    from llama_index.core.memory.memory_blocks.static import StaticMemoryBlock

    m = upstream_memory(StaticMemoryBlock(name="static", static_content="Static text", priority=1), paris(store))
    text = memory_text(asyncio.run(m.aget(input="Tell me about Paris.")))
    assert "Static text" in text and "The capital of France is Paris." in text


def test_upstream_parameterized_memory_block(store: Store) -> None:
    """test_memory_blocks_base.py::test_parameterized_memory_block: keywords
    given to Memory.get reach the blocks; this one takes and ignores them."""
    m = upstream_memory(paris(store))
    content = asyncio.run(m._get_memory_blocks_content([], input="Tell me about Paris.", test_parameter="custom"))
    assert "The capital of France is Paris." in content["consensus_memory"]


def test_upstream_insert_method_setting(store: Store) -> None:
    """test_memory_blocks_base.py::test_insert_method_setting: USER puts the
    blocks into the latest user message, SYSTEM into a system message."""
    from llama_index.core.memory.memory import InsertMethod

    block = paris(store)
    m = upstream_memory(block, insert_method=InsertMethod.USER)
    asyncio.run(m.aput(ChatMessage(role="user", content="Tell me about Paris.")))
    got = asyncio.run(m.aget())
    assert [x.role.value for x in got] == ["user"]
    assert "The capital of France is Paris." in "".join(b.text for b in got[0].blocks if hasattr(b, "text"))

    m = upstream_memory(block, insert_method=InsertMethod.SYSTEM)
    got = asyncio.run(m.aget(input="Tell me about Paris."))
    assert [x.role.value for x in got] == ["system"] and "The capital of France is Paris." in memory_text(got)


def test_upstream_memory_truncation_preserves_priority_zero(store: Store) -> None:
    """test_memory_blocks_base.py::test_memory_truncation_preserves_priority_zero:
    a block of priority 0 is never shortened."""
    from llama_index.core.memory.memory_blocks.static import StaticMemoryBlock

    low = StaticMemoryBlock(name="lower_priority", static_content="Disposable memory. " * 5, priority=1)
    m = upstream_memory(
        paris(store, priority=0), low, token_limit=30, token_flush_size=10, chat_history_token_ratio=0.5
    )
    text = memory_text(asyncio.run(m.aget(input="Tell me about Paris.")))
    full = asyncio.run(m.memory_blocks[0].aget([ChatMessage(role="user", content="Tell me about Paris.")]))
    assert full in text and "Disposable memory" not in text


def test_upstream_vector_memory_block_put(store: Store) -> None:
    """blocks/test_vector.py::test_vector_memory_block_put: one put of a user
    and an assistant message is one write holding both."""
    block = ConsensusMemoryBlock(store, "alice")
    hello = [
        ChatMessage(role="user", content="Hello, how are you?"),
        ChatMessage(role="assistant", content="I'm doing well, thank you for asking!"),
    ]
    asyncio.run(block.aput(messages=hello))
    assert store.stats().deposits == 1
    assert sorted(r.text for r in store.records()) == sorted(m.content for m in hello if m.content)


def test_upstream_vector_memory_block_get(store: Store) -> None:
    """blocks/test_vector.py::test_vector_memory_block_get."""
    result = asyncio.run(paris(store).aget(messages=[ChatMessage(role="user", content="Tell me about Paris.")]))
    assert result != "" and "capital of France is Paris" in result


def test_upstream_empty_messages(store: Store) -> None:
    """blocks/test_vector.py::test_empty_messages."""
    block = ConsensusMemoryBlock(store, "alice")
    assert asyncio.run(block.aget(messages=[])) == ""
    asyncio.run(block.aput(messages=[]))
    assert store.stats().records == 0


def test_upstream_message_without_text(store: Store) -> None:
    """blocks/test_vector.py::test_message_without_text."""
    block = ConsensusMemoryBlock(store, "alice")
    asyncio.run(block.aput(messages=[ChatMessage(role="user", content=None, blocks=[])]))
    assert store.stats().records == 0
