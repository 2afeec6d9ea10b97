"""Moved to `agentsensus.io.export`; this path re-exports it."""

from __future__ import annotations

from .io.export import FORMAT, Exported, export_jsonl, export_rows

__all__ = ["FORMAT", "Exported", "export_rows", "export_jsonl"]
