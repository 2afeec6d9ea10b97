"""``ShardedStore``: a world's memory over K `agentsensus.ray.StoreActor`
shards, split by the place of each event.

A deposit goes to the shard of its event's place, so everything the judge
compares it with, and every affiliation edge it makes, is in that shard;
the shards judge concurrently, each with its own writer. Recall asks only
the shards where the owner has records (an owner -> shards directory, kept
as deposits go and rebuilt from the shards' owner lists at construction)
and merges their hits into the top ``k`` by score, then expands each hit
along its edges as one store would.

What sharding gives up:

- Merges across places. An event reported from two places is two records
  in two shards, never merged, and never joined by an edge; a world where
  witnesses of one event stand in different places gets more records and
  fewer merges than one store would give it.
- All-or-nothing across shards. ``deposit_many`` is one transaction per
  shard; a batch that spans shards can be applied on some and not others
  when a shard fails mid-way (with a ``batch_key``, retrying the batch
  completes it: the shards that committed return their first result).
- One id space. Ids are ``local_id * K + shard``: stable, but not dense
  and not in global deposit order; they mean nothing to a single store.
- Planfence: a lineage lives in one store; keep plans on one StoreActor.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from ..errors import Error
from ..records import Deposit, Memory, Merge, Stats
from .remote_store import resend_while_down, unwrap

__all__ = ["ShardedStore", "place_shard"]

#: ``route(owner, statements) -> place``: the place of a deposit's event.
Route = Callable[[str, Sequence[str]], str]


def place_shard(place: str, shards: int) -> int:
    """The shard of ``place`` among ``shards``: a hash, the same in every
    process and run (not Python's salted ``hash``)."""
    if not isinstance(place, str) or not place:
        raise ValueError(f"place must be a non-empty str, got {place!r}")
    return int.from_bytes(hashlib.blake2b(place.encode("utf-8"), digest_size=8).digest(), "big") % shards


class ShardedStore:
    """Deposits by place over ``actors`` (StoreActor handles, one per
    shard; their order fixes the shard numbers, so keep it). ``route``:
    a function giving a deposit's place when ``place=`` is not passed.
    ``shard_of``: place -> shard index, `place_shard` by default."""

    def __init__(
        self,
        actors: Sequence[Any],
        *,
        route: Optional[Route] = None,
        shard_of: Optional[Callable[[str], int]] = None,
        timeout: Optional[float] = None,
    ) -> None:
        if not actors:
            raise ValueError("a ShardedStore needs at least one shard")
        if route is not None and not callable(route):
            raise TypeError("route must be a callable route(owner, statements) -> place")
        self.shards = list(actors)
        self.k = len(self.shards)
        self.route = route
        self._shard_of = shard_of or (lambda p: place_shard(p, self.k))
        self.timeout = timeout
        # owner -> the shards where it has deposited (a superset after forgets).
        self.directory: dict[str, set[int]] = defaultdict(set)
        names = self._all([a.owner_names.remote() for a in self.shards])
        for s, owners in enumerate(names):
            for o in owners:
                self.directory[o].add(s)

    # -- ids -------------------------------------------------------------------

    def _gid(self, shard: int, local: int) -> int:
        return local * self.k + shard

    def _split(self, gid: int) -> tuple[int, int]:
        if isinstance(gid, bool) or not isinstance(gid, int):
            raise TypeError(f"id must be an int, got {type(gid).__name__}")
        if gid < 0:
            raise KeyError(f"no record {gid}")
        return gid % self.k, gid // self.k

    def _mem(self, shard: int, m: Memory) -> Memory:
        return replace(m, id=self._gid(shard, m.id))

    def _all(self, refs: list[Any]) -> list[Any]:
        return [unwrap(r, "a shard of the store", self.timeout) for r in refs]

    def shard(self, place: str) -> int:
        """The shard index that holds ``place``."""
        s = self._shard_of(place)
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < self.k:
            raise ValueError(f"shard_of({place!r}) gave {s!r}, not a shard index below {self.k}")
        return s

    def _place(self, owner: str, statements: Sequence[str], place: Optional[str]) -> str:
        if place is None:
            if self.route is None:
                raise ValueError("place is required: this ShardedStore has no route function")
            place = self.route(owner, statements)
        return place

    # -- writes ----------------------------------------------------------------

    def deposit(
        self,
        owner: str,
        statements: Sequence[str],
        vectors: Any = None,
        *,
        place: Optional[str] = None,
        round: int = 0,
        judge: Any = None,
    ) -> Deposit:
        """``Store.deposit`` on the shard of ``place`` (or ``route``'s)."""
        s = self.shard(self._place(owner, statements, place))
        d: Deposit = self._all([self.shards[s].deposit.remote(owner, statements, vectors, round, judge)])[0]
        self.directory[owner].add(s)
        return Deposit([self._gid(s, i) for i in d.ids], list(d.merged))

    def deposit_many(
        self,
        items: Iterable[tuple[str, Sequence[str], Any]],
        *,
        places: Optional[Sequence[str]] = None,
        round: int = 0,
        judge: Any = None,
        batch_key: Optional[str] = None,
        retry_for: float = 120.0,
        judge_per_item: bool = False,
    ) -> list[Deposit]:
        """A round of deposits: each shard gets its items as one
        ``deposit_many`` (one transaction there, items in the given order),
        and the shards run concurrently. Results in the order of ``items``.
        ``batch_key``: each shard's part is deposited exactly once (under
        ``KEY#shard``), and a part whose shard died under the call is sent
        again (for up to ``retry_for`` seconds), so a retried batch completes the
        shards it missed and repeats none."""
        batch = list(items)
        if places is not None and len(places) != len(batch):
            raise ValueError(f"places has {len(places)} entries for {len(batch)} items")
        parts: dict[int, list[int]] = defaultdict(list)
        for n, it in enumerate(batch):
            try:
                owner, statements, _ = it
            except (TypeError, ValueError):
                raise TypeError(f"items[{n}] must be a tuple (owner, statements, vectors)") from None
            parts[self.shard(self._place(owner, statements, places[n] if places is not None else None))].append(n)
        order = sorted(parts)

        def send(s: int) -> Any:
            key = None if batch_key is None else f"{batch_key}#{s}"
            return self.shards[s].deposit_many.remote([batch[n] for n in parts[s]], round, judge, key, judge_per_item)

        refs = [send(s) for s in order]
        results: list[Any] = []
        for s, ref in zip(order, refs):
            first = [ref]  # the call already sent; a resend makes a new one

            def get(s: int = s, first: list[Any] = first) -> Any:
                return unwrap(first.pop() if first else send(s), f"shard {s} of the store", self.timeout)

            results.append(get() if batch_key is None else resend_while_down(get, retry_for))
        out: list[Optional[Deposit]] = [None] * len(batch)
        for s, deposits in zip(order, results):
            for n, d in zip(parts[s], deposits):
                out[n] = Deposit([self._gid(s, i) for i in d.ids], list(d.merged))
                self.directory[batch[n][0]].add(s)
        return [d for d in out if d is not None]

    def forget(self, owner: str, id: int) -> None:
        """``Store.forget`` on the record's shard."""
        s, local = self._split(id)
        self._all([self.shards[s].forget.remote(owner, local)])

    def checkpoint(self) -> list[int]:
        """Checkpoints every shard; their journal seqs."""
        return [int(x) for x in self._all([a.checkpoint.remote() for a in self.shards])]

    # -- reads -----------------------------------------------------------------

    def recall(self, owner: str, query: Any, *, k: int = 5, expand: bool = True) -> list[Memory]:
        """The ``k`` best of ``owner``'s records over its shards, then (with
        ``expand``) their neighbors ``owner`` owns, as ``Store.recall``."""
        return self.recall_many([(owner, query)], k=k, expand=expand)[0]

    def recall_many(self, queries: Iterable[tuple[str, Any]], *, k: int = 5, expand: bool = True) -> list[list[Memory]]:
        """One recall per ``(owner, query)``: one call per shard for all of them."""
        qs = list(queries)
        asked: dict[int, list[int]] = defaultdict(list)  # shard -> query numbers
        for n, (owner, _) in enumerate(qs):
            for s in sorted(self.directory.get(owner, ())):
                asked[s].append(n)
        if not asked and qs:  # nobody known: let one shard check the input and answer []
            asked[0] = list(range(len(qs)))
        order = sorted(asked)
        refs = [self.shards[s].recall_hits.remote([qs[n] for n in asked[s]], k, expand) for s in order]
        found: list[list[tuple[Memory, list[Memory]]]] = [[] for _ in qs]
        for s, answers in zip(order, self._all(refs)):
            for n, (hits, nbs) in zip(asked[s], answers):
                found[n] += [(self._mem(s, h), [self._mem(s, m) for m in row]) for h, row in zip(hits, nbs)]
        out: list[list[Memory]] = []
        for rows in found:
            rows.sort(key=lambda hn: (-(hn[0].score or 0.0), hn[0].id))
            top = rows[:k]
            result = [h for h, _ in top]
            seen = {h.id for h in result}
            for _, row in top:
                for m in row:
                    if m.id not in seen:
                        seen.add(m.id)
                        result.append(m)
            out.append(result)
        return out

    def get(self, id: int) -> Memory:
        """The record ``id`` from its shard; ``KeyError`` when absent."""
        s, local = self._split(id)
        return self._mem(s, self._all([self.shards[s].get.remote(local)])[0])

    def owned(self, owner: str) -> list[int]:
        """Record ids ``owner`` owns over all its shards, ascending."""
        shards = sorted(self.directory.get(owner, ()))
        lists = self._all([self.shards[s].owned.remote(owner) for s in shards])
        return sorted(self._gid(s, i) for s, ids in zip(shards, lists) for i in ids)

    def stats(self) -> Stats:
        """Counts summed over the shards (``max_owners`` the largest; an
        owner in several shards is one of ``agents``)."""
        per: list[Stats] = self._all([a.stats.remote() for a in self.shards])
        owners = set().union(*self._all([a.owner_names.remote() for a in self.shards]))
        return Stats(
            records=sum(x.records for x in per),
            deposits=sum(x.deposits for x in per),
            merges=sum(x.merges for x in per),
            shared=sum(x.shared for x in per),
            linked=sum(x.linked for x in per),
            max_owners=max(x.max_owners for x in per),
            agents=len(owners),
        )

    def merges(self) -> Iterator[Merge]:
        """Every shard's merge log in turn (each oldest first), survivors as global ids."""
        for s, log in enumerate(self._all([a.merges.remote() for a in self.shards])):
            for m in log:
                yield replace(m, survivor=self._gid(s, m.survivor))

    @property
    def fence(self) -> Any:
        """Refused: a lineage lives in one store (keep plans on one StoreActor)."""
        raise Error("a ShardedStore has no single lineage: keep Planfence on one StoreActor")
