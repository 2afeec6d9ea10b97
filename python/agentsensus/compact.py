"""Moved to `agentsensus.io.compact`; this path re-exports it."""

from __future__ import annotations

from .io.compact import Compacted, compact

__all__ = ["compact", "Compacted"]
