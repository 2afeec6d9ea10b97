"""Moved to `agentsensus.io.importer`; this path re-exports it."""

from __future__ import annotations

from .io.importer import Imported, import_jsonl

__all__ = ["Imported", "import_jsonl"]
