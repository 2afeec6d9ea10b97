"""autogen-core's own memory tests, run against ``ConsensusMemory``.

The module is autogen-core's ``tests/test_memory.py`` at the pinned version,
fetched from PyPI by :mod:`upstream`. Its tests make ``ListMemory()``; that
name is rebound to a ``ConsensusMemory`` on a fresh store directory. That
and the not-applicable cases are the whole adaptation
(tests/integrations/README.md lists each, with its reason).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional

import pytest
from agentsensus.integrations.autogen import ConsensusMemory

sys.path.insert(0, os.path.dirname(__file__))
import upstream  # noqa: E402

pytestmark = pytest.mark.slow  # the framework's own suite

_made: list[tuple[ConsensusMemory, str]] = []


class ListConsensusMemory(ConsensusMemory):
    """Stands in for ``ListMemory(name=None)``: one agent's ConsensusMemory on a fresh store."""

    def __init__(self, name: Optional[str] = None) -> None:
        path = tempfile.mkdtemp(prefix="autogen-upstream-")
        super().__init__(os.path.join(path, "store"), "agent", name=name, sync=False)
        _made.append((self, path))


@pytest.fixture(autouse=True)
def _close_what_the_suite_opened() -> Iterator[None]:
    yield
    while _made:
        memory, path = _made.pop()
        asyncio.run(memory.close())
        shutil.rmtree(path, ignore_errors=True)


CORE = upstream.sdist("autogen-core", "0.7.5")
memory_suite = upstream.load(CORE / "tests" / "test_memory.py", "upstream_autogen_test_memory")
memory_suite.ListMemory = ListConsensusMemory

NOT_APPLICABLE = {
    "test_memory_protocol_attributes": "checks autogen's Memory class itself, no memory involved",
    "test_memory_abc_implementation": "checks autogen's Memory ABC with classes of its own, no memory involved",
    "test_memory_component_load_config_from_base_model": "loads 'autogen_core.memory.ListMemory' by its provider "
    "path with ListMemory's config (memory_contents); test_autogen_memory.py round-trips ConsensusMemory's",
    "test_memory_component_dump_config_to_base_model": "asserts the provider is 'autogen_core.memory.ListMemory' "
    "and a 'memory_contents' config; test_autogen_memory.py round-trips ConsensusMemory's",
    "test_list_memory_update_context": "ListMemory puts every content into the context whatever it holds; "
    "ConsensusMemory recalls with the context's last text message, and this context has none "
    "(test_autogen_memory.py tests update_context with one)",
    "test_list_memory_content_types": "adds BINARY content, which ListMemory keeps as bytes; ConsensusMemory "
    "refuses it with ValueError('Unsupported content type'), as autogen-ext's ChromaDB memory does "
    "(test_autogen_memory.py tests text, JSON and Markdown round trips and the refusal)",
}

globals().update(upstream.collect(memory_suite, NOT_APPLICABLE))


def test_readme_lists_every_adaptation() -> None:
    """tests/integrations/README.md names every left-out case of this suite."""
    readme = (Path(__file__).parent / "README.md").read_text()
    for name in NOT_APPLICABLE:
        assert f"`{name}`" in readme, name
