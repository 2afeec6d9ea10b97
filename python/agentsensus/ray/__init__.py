"""agentsensus on Ray (the ``ray`` extra): a store as an actor on the node
that holds its files, clients of it anywhere in the cluster, Planfence
owners as actors, and a world sharded by place. docs/scale.md says when to
use which.

- `StoreActor`: one store in a Ray actor (reads in parallel, one
  writer, restartable, placed with `on_node`).
- `RemoteStore`: ``Store``'s methods over a StoreActor.
- `ShardedStore`: deposits by place over K StoreActors, recall
  merged over the owner's shards.
- `RayHeadsClient`: Planfence heads asked of owner actors.
- `local_cluster`: a cluster on 127.0.0.1 with token authentication.
"""

from __future__ import annotations

try:
    import ray as _ray  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("agentsensus.ray needs Ray: pip install 'agentsensus[ray]'") from e

from .loopback import local_cluster, loopback_env
from .owner_heads import RayHeadsClient, owner_actor_name
from .remote_store import RemoteFence, RemoteStore
from .sharded_store import ShardedStore, place_shard
from .store_actor import StoreActor, node_resource, on_node

__all__ = [
    "StoreActor",
    "RemoteStore",
    "RemoteFence",
    "ShardedStore",
    "RayHeadsClient",
    "owner_actor_name",
    "node_resource",
    "on_node",
    "place_shard",
    "local_cluster",
    "loopback_env",
]
