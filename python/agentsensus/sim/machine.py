"""The machine a run measured on: its CPU, cores, Python and load.

A run's timings mean little without the machine and how busy it was, so
``run`` records this beside the numbers (``metrics.json``'s ``machine``) and
the report prints it in its header.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

__all__ = ["cpu_model", "load_average", "describe_machine"]


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name from ``cpuinfo`` where present, else `platform.processor` (may be empty)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value.strip():
            fields.setdefault(key.strip().lower(), " ".join(value.split()))
    # x86 says "model name" ("model" is a number there); some ARM kernels say only "Model" or "Hardware".
    for key in ("model name", "cpu model", "hardware"):
        if key in fields:
            return fields[key]
    if not fields.get("model", "0").isdigit():
        return fields["model"]
    return platform.processor() or platform.machine()


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (``os.getloadavg``), or ``None`` where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def describe_machine() -> dict[str, Any]:
    """CPU model, logical cores (and those this process may use), Python, platform, and the load now.

    ``run`` calls this at its start (``load_start``) and adds ``load_end`` when it finishes.
    """
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "load_start": load_average(),
    }
