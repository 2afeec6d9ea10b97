"""``RemoteStore``: `agentsensus.Store`'s methods, served by a
`agentsensus.ray.StoreActor` anywhere in the cluster.

Every call is one actor call. Arguments and results travel pickled; Ray
moves any argument over 100 KiB (a round's vectors) through its object
store, read without a copy on the actor's node. Errors are the store's own
(``ValueError``, ``KeyError``, ``agentsensus.Error`` ...), raised here with
their one-line message, not wrapped in Ray's traceback; a dead actor raises
``agentsensus.Error`` naming the store.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from ..errors import Error
from ..records import Deposit, Memory, Merge, Stats

__all__ = ["RemoteStore", "RemoteFence", "unwrap", "resend_while_down"]


def unwrap(ref: Any, what: str, timeout: Optional[float] = None) -> Any:
    """``ray.get(ref)``, raising the remote exception itself (not Ray's
    wrapper), and ``Error`` naming ``what`` when the actor is gone."""
    try:
        return ray.get(ref, timeout=timeout)
    except RayTaskError as e:
        cause = e.cause
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except RayActorError as e:
        raise _died(e, what) from None
    except GetTimeoutError:
        raise Error(f"{what} did not answer within {timeout} s") from None


async def _unwrap_async(ref: Any, what: str) -> Any:
    try:
        return await ref
    except RayTaskError as e:
        cause = e.cause
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except RayActorError as e:
        raise _died(e, what) from None


_DIED = "is unavailable: its actor died"


def _actor_died(e: Error) -> bool:
    """Whether ``e`` is `unwrap`'s report of a dead (maybe restarting) actor."""
    return _DIED in str(e)


def resend_while_down(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``, called again while it fails because its actor is dead or
    restarting, for at most ``seconds`` (waits 0.1 s, doubling to 2 s, between
    tries). Only for calls that are safe to repeat (keyed batches)."""
    deadline = time.monotonic() + seconds
    wait = 0.1
    while True:
        try:
            return call()
        except Error as e:
            if not _actor_died(e) or time.monotonic() + wait > deadline:
                raise
        time.sleep(wait)
        wait = min(2 * wait, 2.0)


def _died(e: BaseException, what: str) -> Error:
    """An actor that died in ``__init__`` (a bad option, a store that would
    not open) says why in the last line of Ray's report: keep that line."""
    if getattr(e, "actor_init_failed", False):
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        why = next(
            (ln for ln in reversed(lines) if ": " in ln and ln.split(":")[0].isidentifier()), lines[-1] if lines else ""
        )
        return Error(f"{what} could not open: {why}")
    return Error(f"{what} {_DIED} ({type(e).__name__})")


class RemoteStore:
    """A `agentsensus.Store` held by ``actor`` (a
    `agentsensus.ray.StoreActor` handle). Many drivers, tasks and
    actors may hold a ``RemoteStore`` of the same actor (it pickles with the
    handle); ``close`` closes only this client, ``shutdown`` the store.

    Judges: ``deposit(..., judge=f)`` sends ``f`` (pickled) to run in the
    actor; without one, the judge given to ``StoreActor.remote`` runs.
    ``timeout``: seconds to wait for each call, ``None`` for no limit.
    ``retry_for``: for how many seconds a ``deposit_many`` with a
    ``batch_key`` is sent again while the actor is dead or restarting
    (writes without a key never are)."""

    def __init__(self, actor: Any, *, timeout: Optional[float] = None, retry_for: float = 120.0) -> None:
        if isinstance(retry_for, bool) or not isinstance(retry_for, (int, float)) or not 0 <= retry_for < 1e6:
            raise ValueError(f"retry_for must be a number of seconds >= 0, got {retry_for!r}")
        self.actor = actor
        self.timeout = timeout
        self.retry_for = float(retry_for)
        self._closed = False
        info = unwrap(actor.info.remote(), "the store actor", timeout)
        self.path: str = info["path"]
        self.dim: int = info["dim"]
        self.metric: str = info["metric"]
        self.readonly: bool = info["readonly"]
        self.candidates: int = info["candidates"]
        self.min_similarity: float = info["min_similarity"]

    def __reduce__(self) -> Any:
        return (RemoteStore, (self.actor,), {"timeout": self.timeout, "retry_for": self.retry_for})

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.timeout = state["timeout"]
        self.retry_for = state.get("retry_for", 120.0)

    def __repr__(self) -> str:
        return f"RemoteStore({self.path!r}, {'closed' if self._closed else f'dim={self.dim}'})"

    def _call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise Error(f"the store at {self.path} is closed")
        return unwrap(getattr(self.actor, method).remote(*args), f"the store at {self.path}", self.timeout)

    # -- lifecycle -------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once ``close`` (or ``shutdown``) has run on this client."""
        return self._closed

    def close(self) -> None:
        """Closes this client (later calls raise ``Error``); the actor and its
        store stay up for other clients. Calling it again does nothing."""
        self._closed = True

    def shutdown(self) -> None:
        """Saves the index, closes the store in the actor and ends the actor."""
        if not self._closed:
            try:
                self._call("close")
            finally:
                self._closed = True
                ray.kill(self.actor, no_restart=True)

    def checkpoint(self) -> int:
        """``Store.checkpoint`` in the actor: the journal seq saved."""
        return int(self._call("checkpoint"))

    def __enter__(self) -> "RemoteStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------

    def deposit(
        self, owner: str, statements: Sequence[str], vectors: Any = None, *, round: int = 0, judge: Any = None
    ) -> Deposit:
        """``Store.deposit`` in the actor."""
        return self._call("deposit", owner, statements, vectors, round, judge)  # type: ignore[no-any-return]

    def deposit_many(
        self,
        items: Iterable[tuple[str, Sequence[str], Any]],
        *,
        round: int = 0,
        judge: Any = None,
        batch_key: Optional[str] = None,
        judge_per_item: bool = False,
    ) -> list[Deposit]:
        """``Store.deposit_many`` in the actor: one transaction there. With
        ``batch_key`` the batch is deposited exactly once, so a call the
        actor's death cut off is sent again to the restarted actor (up to
        ``retry_for`` seconds): it deposits the batch if the first call did not
        commit, and returns the first result if it did."""
        batch = list(items)
        if batch_key is None:
            return self._call("deposit_many", batch, round, judge, None, judge_per_item)  # type: ignore[no-any-return]
        return resend_while_down(  # type: ignore[no-any-return]
            lambda: self._call("deposit_many", batch, round, judge, batch_key, judge_per_item), self.retry_for
        )

    async def adeposit(
        self, owner: str, statements: Sequence[str], vectors: Any = None, *, round: int = 0, judge: Any = None
    ) -> Deposit:
        """``Store.adeposit``: awaits the actor call (the event loop stays
        free); a coroutine-function judge runs in the actor's own loop."""
        if self._closed:
            raise Error(f"the store at {self.path} is closed")
        ref = self.actor.adeposit.remote(owner, statements, vectors, round, judge)
        return await _unwrap_async(ref, f"the store at {self.path}")  # type: ignore[no-any-return]

    def forget(self, owner: str, id: int) -> None:
        """``Store.forget`` in the actor."""
        self._call("forget", owner, id)

    # -- reads -----------------------------------------------------------------

    def recall(self, owner: str, query: Any, *, k: int = 5, expand: bool = True) -> list[Memory]:
        """``Store.recall`` in the actor."""
        return self._call("recall", owner, query, k, expand)  # type: ignore[no-any-return]

    def recall_many(self, queries: Iterable[tuple[str, Any]], *, k: int = 5, expand: bool = True) -> list[list[Memory]]:
        """One ``recall`` per ``(owner, query)``, all in one actor call (one
        round trip for a whole round of agents)."""
        return self._call("recall_many", list(queries), k, expand)  # type: ignore[no-any-return]

    def get(self, id: int) -> Memory:
        """``Store.get`` in the actor; ``KeyError`` when absent."""
        return self._call("get", id)  # type: ignore[no-any-return]

    def neighbors(self, id: int) -> list[int]:
        """``Store.neighbors`` in the actor."""
        return self._call("neighbors", id)  # type: ignore[no-any-return]

    def get_many(self, ids: Sequence[int]) -> list[Memory]:
        """``Store.get`` of every id, in order, in one actor call; ``KeyError`` when one is absent."""
        return self._call("get_many", [int(i) for i in ids])  # type: ignore[no-any-return]

    def neighbors_many(self, ids: Sequence[int]) -> list[list[int]]:
        """``Store.neighbors`` of every id, in order, in one actor call."""
        return self._call("neighbors_many", [int(i) for i in ids])  # type: ignore[no-any-return]

    def copy_to(self, dest: str) -> Any:
        """Copies the store's files to ``dest`` on the actor's node (the store
        closed for the copy, then reopened); returns the store's judge."""
        return self._call("copy_to", dest)

    def owned(self, owner: str) -> list[int]:
        """``Store.owned`` in the actor."""
        return self._call("owned", owner)  # type: ignore[no-any-return]

    def stats(self) -> Stats:
        """``Store.stats`` in the actor."""
        return self._call("stats")  # type: ignore[no-any-return]

    def merges(self) -> Iterator[Merge]:
        """The merge log, oldest first (read in one call)."""
        return iter(self._call("merges"))

    def verify(self) -> list[str]:
        """``Store.verify`` in the actor."""
        return self._call("verify")  # type: ignore[no-any-return]

    @property
    def fence(self) -> "RemoteFence":
        """Planfence over the actor's store (see `RemoteFence`)."""
        if self._closed:
            raise Error(f"the store at {self.path} is closed")
        return RemoteFence(self)


class RemoteFence:
    """`agentsensus.planfence.fence.Fence` of a ``RemoteStore``:
    ``publish``, ``derive``, ``observe``, ``head``, ``owner``, ``value``,
    ``keys``, ``verify``, ``frontier``, ``check``, ``check_all``,
    ``answer``. ``check(heads=...)`` runs in the actor, so ``heads`` must
    pickle (a `agentsensus.ray.RayHeadsClient` does). ``guard`` is
    not offered: its replan stages writes in the calling thread of the
    store's own process; run the guard in the actor's process, or check,
    replan and check again from here."""

    def __init__(self, store: RemoteStore) -> None:
        self._store = store

    def publish(self, key: str, owner: str, value: Any) -> int:
        """``Fence.publish`` in the actor."""
        return int(self._store._call("fence_write", "publish", key, owner, value))

    def derive(self, key: str, owner: str, value: Any, inputs: Mapping[str, int]) -> int:
        """``Fence.derive`` in the actor."""
        return int(self._store._call("fence_write", "derive", key, owner, value, dict(inputs)))

    def observe(self, key: str, owner: str, version: int, value: Any) -> int:
        """``Fence.observe`` in the actor."""
        return int(self._store._call("fence_write", "observe", key, owner, version, value))

    def _read(self, op: str, *args: Any, **kwargs: Any) -> Any:
        if self._store._closed:
            raise Error(f"the store at {self._store.path} is closed")
        ref = self._store.actor.fence_read.remote(op, *args, **kwargs)
        return unwrap(ref, f"the store at {self._store.path}", self._store.timeout)

    def head(self, key: str) -> int:
        """``Fence.head`` in the actor."""
        return int(self._read("head", key))

    def owner(self, key: str) -> str:
        """``Fence.owner`` in the actor."""
        return str(self._read("owner", key))

    def value(self, key: str, version: Optional[int] = None) -> bytes:
        """``Fence.value`` in the actor."""
        return bytes(self._read("value", key, version))

    def keys(self) -> list[str]:
        """``Fence.keys`` in the actor."""
        return list(self._read("keys"))

    def verify(self) -> list[str]:
        """``Fence.verify`` in the actor."""
        return list(self._read("verify"))

    def frontier(self, key: str, *, scope: Optional[Iterable[str]] = None) -> Any:
        """``Fence.frontier`` in the actor."""
        return self._read("frontier", key, scope=None if scope is None else list(scope))

    def check(self, key: str, *, scope: Optional[Iterable[str]] = None, heads: Any = None) -> Any:
        """``Fence.check`` in the actor (``heads`` must pickle)."""
        return self._read("check", key, scope=None if scope is None else list(scope), heads=heads)

    def check_all(self, *, heads: Any = None) -> Any:
        """``Fence.check_all`` in the actor."""
        return self._read("check_all", heads=heads)

    def answer(self, owner: str, query: bytes) -> bytes:
        """``Fence.answer`` in the actor."""
        return bytes(self._read("answer", owner, query))
