"""One Ray cluster per test module, on 127.0.0.1 with token authentication,
shut down when the module is done (agentsensus.ray.local_cluster)."""

from __future__ import annotations

import sys
from typing import Iterator

import pytest


def pickle_by_value(module_name: str) -> None:
    """Judges defined in a test module travel to the actors by value (the
    tests' modules are not importable in Ray's worker processes)."""
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[module_name])


@pytest.fixture(scope="module")
def cluster(request) -> Iterator[object]:
    """A cluster of the nodes the module asks for (``NODES``: each node's
    custom resources; one plain node by default; ``SYSTEM_CONFIG``: Ray's
    system config, e.g. tuned health checks)."""
    from agentsensus.ray import local_cluster

    nodes = getattr(request.module, "NODES", [{}])
    config = getattr(request.module, "SYSTEM_CONFIG", None)
    with local_cluster(nodes, num_cpus=1, object_store_memory=100 << 20, system_config=config) as c:
        yield c
