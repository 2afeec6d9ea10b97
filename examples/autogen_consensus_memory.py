"""Two AutoGen agents' memories on one consensus store.

Run: pip install 'agentsensus[autogen]'; python examples/autogen_consensus_memory.py
Each ConsensusMemory is one agent's view (its owner). What both add as the
same fact becomes one record; update_context feeds an agent's model context
only from what that agent owns.
"""

from __future__ import annotations

import asyncio
import tempfile

from agentsensus import Store, embedders
from agentsensus.integrations.autogen import ConsensusMemory
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import UnboundedChatCompletionContext
from autogen_core.models import UserMessage


def fact(text: str) -> MemoryContent:
    return MemoryContent(content=text, mime_type=MemoryMimeType.TEXT)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, Store(f"{tmp}/memory", embed=embedders.hash) as store:
        hamlet = ConsensusMemory(store, "Hamlet")
        horatio = ConsensusMemory(store, "Horatio")
        await hamlet.add(fact("The ghost walks on the platform at midnight"))
        await hamlet.add(fact("The king drinks deep tonight"))
        await horatio.add(fact("The ghost walks on the platform at midnight"))

        context = UnboundedChatCompletionContext()
        await context.add_message(UserMessage(content="What did you see at midnight?", source="user"))
        result = await horatio.update_context(context)
        print("Horatio's context gets:", [m.content for m in result.memories.results])
        for message in await context.get_messages():
            print(type(message).__name__, repr(message.content))
        stats = store.stats()
        print(f"records={stats.records} shared={stats.shared}")
        assert stats.records == 2 and stats.shared == 1


if __name__ == "__main__":
    asyncio.run(main())
