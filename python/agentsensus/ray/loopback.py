"""A Ray cluster on this machine bound to 127.0.0.1 only, with Ray's token
authentication on: what the tests and the benchmarks start.

Ray replaces a loopback address with the machine's network address when a
driver connects (``resolve_ip_for_localhost``) unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which makes Ray take 127.0.0.1 as
the node's address; that, ``node_ip_address="127.0.0.1"`` on every node
and no dashboard keep every socket on the loopback interface.
"""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence

__all__ = ["loopback_env", "local_cluster"]

LOOPBACK = "127.0.0.1"


def loopback_env(token: Optional[str] = None) -> dict[str, str]:
    """Sets (in ``os.environ``, inherited by every Ray process started from
    here) token authentication with ``token`` (a fresh 256-bit one when
    ``None`` and none is set), loopback node addresses and no usage-stats
    reporting. Returns the values set."""
    env = {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token or os.environ.get("RAY_AUTH_TOKEN") or secrets.token_hex(32),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    os.environ.update(env)
    import ray._private.ray_constants as constants
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    # Ray read these at import: make this process see them too (read at
    # call time, and the config Ray's own token setup refreshes the same way).
    constants.ENABLE_RAY_CLUSTER = False
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    return env


@contextmanager
def local_cluster(
    nodes: Sequence[Mapping[str, float]] = ({},),
    *,
    num_cpus: int = 1,
    object_store_memory: int = 100 << 20,
    system_config: Optional[Mapping[str, Any]] = None,
) -> Iterator[Any]:
    """A ``ray.cluster_utils.Cluster`` of ``len(nodes)`` nodes on 127.0.0.1
    (``nodes[i]``: node i's custom resources), with this process connected
    as its driver; shut down on exit, whatever happened inside."""
    saved = {
        k: os.environ.get(k)
        for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_USAGE_STATS_ENABLED")
    }
    loopback_env()
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        raise RuntimeError("a Ray driver is already connected in this process: shut it down first")
    head: dict[str, Any] = {
        "node_ip_address": LOOPBACK,
        "num_cpus": num_cpus,
        "object_store_memory": object_store_memory,
        "include_dashboard": False,
        "resources": dict(nodes[0]) if nodes else {},
    }
    if system_config:
        head["_system_config"] = dict(system_config)
    cluster = Cluster(initialize_head=True, connect=False, head_node_args=head)
    try:
        for res in nodes[1:]:
            cluster.add_node(
                node_ip_address=LOOPBACK,
                num_cpus=num_cpus,
                object_store_memory=object_store_memory,
                resources=dict(res),
            )
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, _node_ip_address=LOOPBACK, logging_level="WARNING", log_to_driver=False)
        yield cluster
    finally:
        try:
            ray.shutdown()
        finally:
            cluster.shutdown()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
