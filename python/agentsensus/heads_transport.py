"""Moved to `agentsensus.planfence.transport`; this path re-exports it,
and ``python -m agentsensus.heads_transport`` still runs its server."""

from __future__ import annotations

import sys

from .planfence.transport import *  # noqa: F401,F403 - the same public names
from .planfence.transport import __all__, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main(prog="python -m agentsensus.heads_transport"))
