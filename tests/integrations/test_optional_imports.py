"""Importing agentsensus imports none of the optional extras."""

from __future__ import annotations

import os
import subprocess
import sys

HEAVY = ("torch", "sentence_transformers", "openai", "langgraph", "autogen_core", "mcp", "crewai")


def test_importing_agentsensus_loads_no_extra() -> None:
    code = (
        "import sys, agentsensus, agentsensus.integrations, agentsensus.cli; "
        "import agentsensus.integrations.mcp_server, agentsensus.integrations.open_stores; "
        "import agentsensus.integrations.crewai, agentsensus.integrations.crewai_views; "
        "from agentsensus import embedders, judges; embedders.minilm.dim; judges.llm; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"
