"""Moved to `agentsensus.planfence.fence`; this path re-exports it."""

from __future__ import annotations

from .planfence.fence import (
    MAX_INPUTS,
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    Check,
    Fence,
    HeadsFn,
    Link,
    Stale,
    StalePlanError,
    UnknownKeyError,
    Value,
    check_key,
    value_digest,
)

__all__ = ["Fence", "Link", "Stale", "Check", "StalePlanError", "UnknownKeyError", "value_digest"]
__all__ += ["MAX_INPUTS", "MAX_KEY_BYTES", "MAX_VALUE_BYTES", "HeadsFn", "Value", "check_key"]
