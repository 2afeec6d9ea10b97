"""Adapters to agent frameworks, each behind an optional extra.

- :mod:`agentsensus.integrations.langgraph`: ``ConsensusStore``, a LangGraph
  ``BaseStore`` (``pip install 'agentsensus[langgraph]'``);
- :mod:`agentsensus.integrations.autogen`: ``ConsensusMemory``, an
  ``autogen_core`` ``Memory`` (``pip install 'agentsensus[autogen]'``);
- :mod:`agentsensus.integrations.adk`: ``ConsensusMemoryService``, a Google
  ADK ``BaseMemoryService`` (``pip install 'agentsensus[adk]'``);
- :mod:`agentsensus.integrations.mcp_server`: ``agentsensus mcp PATH``, the
  store as a Model Context Protocol server (``pip install 'agentsensus[mcp]'``);
- :mod:`agentsensus.integrations.mem0`: ``Memory`` and ``AsyncMemory``, mem0
  2.x's API (no extra: it needs no mem0), with its ids
  (:mod:`.mem0_ids`) and filter language (:mod:`.mem0_filters`);
- :mod:`agentsensus.integrations.llama_index`: ``ConsensusMemoryBlock``, a
  memory block for LlamaIndex's ``Memory`` (``pip install 'agentsensus[llama-index]'``).
- :mod:`agentsensus.integrations.crewai`: ``ConsensusStorage``, a CrewAI 1.x
  memory ``StorageBackend`` (``pip install 'agentsensus[crewai]'``), with
  its owner and scope rule (:mod:`.crewai_views`).

Beside them: :mod:`.judge_spec` (judges named by a spec string, for saved
configs) and :mod:`.open_stores` (one open ``Store`` per path, shared by the
adapters of a process). Importing this package imports no framework.
"""
