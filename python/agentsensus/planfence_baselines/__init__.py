"""Executors for the Planfence experiments, behind one interface
(:class:`Executor`): Planfence itself and the baselines it is compared with.
The emulated LTE network they share lives in :mod:`.emulated_link`."""

from __future__ import annotations

from .centralized_lineage import CentralizedLineage
from .executor import Executor, Outcome
from .freshness_only import FreshnessOnly
from .per_update_sync import PerUpdateSync
from .planfence_executor import PlanfenceExecutor
from .readset_validator import ReadSetValidator

__all__ = [
    "Executor",
    "Outcome",
    "PlanfenceExecutor",
    "FreshnessOnly",
    "CentralizedLineage",
    "PerUpdateSync",
    "ReadSetValidator",
]
