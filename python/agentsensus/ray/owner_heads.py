"""Planfence owners as actors: `RayHeadsClient` asks each owner's
`agentsensus.ray.StoreActor` for its heads over Ray calls.

It is a heads client as `agentsensus.planfence.fence.Fence.check`
takes one (``ask_encoded``): each owner gets the encoded head query the
fence built and answers it from its own lineage (``Fence.answer``). All
owners are asked at once; an owner whose actor is dead, that has no actor
here, or that does not answer within ``timeout`` gets an
``OwnerUnavailable`` naming it, so the check is not current and its
``Stale.reason`` says which owner and why.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Mapping, Optional, Union

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from ..planfence.transport import OwnerUnavailable

__all__ = ["RayHeadsClient", "owner_actor_name"]


def owner_actor_name(owner: str) -> str:
    """The Ray actor name an owner's store actor is registered under."""
    if not isinstance(owner, str) or not owner:
        raise ValueError(f"owner must be a non-empty str, got {owner!r}")
    return f"agentsensus-owner:{owner}"


class RayHeadsClient:
    """Asks owner actors for heads. ``actors``: owner -> its StoreActor
    handle. `named` finds them by `owner_actor_name` instead.
    Pickles with its handles, so a check can run inside another actor."""

    def __init__(self, actors: Mapping[str, Any], *, timeout: float = 10.0) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._actors = dict(actors)
        self.timeout = float(timeout)

    @classmethod
    def named(
        cls, owners: Iterable[str], *, namespace: Optional[str] = None, timeout: float = 10.0
    ) -> "RayHeadsClient":
        """The actors registered as ``owner_actor_name(owner)``; an owner
        whose actor cannot be found is left out (its checks are not current)."""
        found: dict[str, Any] = {}
        for o in owners:
            try:
                found[o] = ray.get_actor(owner_actor_name(o), namespace=namespace)
            except ValueError:
                pass
        return cls(found, timeout=timeout)

    def ask_encoded(self, queries: Mapping[str, bytes]) -> dict[str, Union[bytes, BaseException]]:
        """Each owner's encoded answer, or the error that kept it from answering."""
        out: dict[str, Union[bytes, BaseException]] = {}
        refs: dict[str, Any] = {}
        for owner, q in queries.items():
            actor = self._actors.get(owner)
            if actor is None:
                out[owner] = OwnerUnavailable(f"owner {owner!r} has no actor here")
            else:
                refs[owner] = actor.answer.remote(owner, q)
        deadline = time.monotonic() + self.timeout
        for owner, ref in refs.items():
            try:
                out[owner] = bytes(ray.get(ref, timeout=max(0.0, deadline - time.monotonic())))
            except RayActorError as e:
                out[owner] = OwnerUnavailable(f"owner {owner!r} did not answer: its actor is dead ({type(e).__name__})")
            except GetTimeoutError:
                out[owner] = OwnerUnavailable(f"owner {owner!r} did not answer within {self.timeout} s")
            except RayTaskError as e:
                out[owner] = OwnerUnavailable(f"owner {owner!r} refused the query: {e.cause}")
        return out
