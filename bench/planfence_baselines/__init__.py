"""Executors for the Planfence experiments (bench/planfence_experiments.py),
behind one interface (:class:`Executor`): Planfence itself and the baselines
it is compared with. They use the installed ``agentsensus`` and are not part
of it. The emulated LTE network they share lives in :mod:`.emulated_link`;
per-update synchronization timed on it, with acknowledgements, in
:mod:`.acknowledged_sync`."""

from __future__ import annotations

from .acknowledged_sync import AcknowledgedSync, SyncUpdate
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
    "AcknowledgedSync",
    "SyncUpdate",
]
