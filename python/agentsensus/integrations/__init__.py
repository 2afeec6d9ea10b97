"""Adapters to agent frameworks, each behind an optional extra.

- `agentsensus.integrations.langgraph`: ``ConsensusStore``, a LangGraph
  ``BaseStore`` (``pip install 'agentsensus[langgraph]'``);
- `agentsensus.integrations.autogen`: ``ConsensusMemory``, an
  ``autogen_core`` ``Memory`` (``pip install 'agentsensus[autogen]'``);
- `agentsensus.integrations.adk`: ``ConsensusMemoryService``, a Google
  ADK ``BaseMemoryService`` (``pip install 'agentsensus[adk]'``);
- `agentsensus.integrations.mcp_server`: ``agentsensus mcp PATH``, the
  store as a Model Context Protocol server (``pip install 'agentsensus[mcp]'``);
- `agentsensus.integrations.mem0`: ``Memory`` and ``AsyncMemory``, mem0
  2.x's API (no extra: it needs no mem0), with its ids
  (`.mem0_ids`) and filter language (`.mem0_filters`);
- `agentsensus.integrations.llama_index`: ``ConsensusMemoryBlock``, a
  memory block for LlamaIndex's ``Memory`` (``pip install 'agentsensus[llama-index]'``).
- `agentsensus.integrations.crewai`: ``ConsensusStorage``, a CrewAI 1.x
  memory ``StorageBackend`` (``pip install 'agentsensus[crewai]'``), with
  its owner and scope rule (`.crewai_views`).

Beside them: `judge_spec` (judges named by a spec string, for saved
configs) and `open_stores` (one open ``Store`` per path, shared by the
adapters of a process). Importing this package imports no framework.
"""
