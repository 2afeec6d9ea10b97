"""Adapters to agent frameworks, each behind an optional extra.

- :mod:`agentsensus.integrations.langgraph`: ``ConsensusStore``, a LangGraph
  ``BaseStore`` (``pip install 'agentsensus[langgraph]'``);
- :mod:`agentsensus.integrations.autogen`: ``ConsensusMemory``, an
  ``autogen_core`` ``Memory`` (``pip install 'agentsensus[autogen]'``).

Importing this package imports neither framework.
"""
