"""The consensus backend: this project's engine, ``agentsensus.Store``.

Witnesses of one event deposit their own accounts; the judge merges a
statement into an equivalent record, whose owner set becomes the union of its
witnesses, and the statements of one deposit are joined by affiliation edges.
A round is one ``deposit_many`` (one transaction, the judge asked about the
whole round in passes). Recall is the store's owner-scoped search with one
hop of expansion.

``merging=False`` is the paper's ablation: each agent writes to a store of
its own, so no statement can merge with another agent's and nothing is shared
(an agent's repeats of its own exact words may still merge, as they would in
any per-agent store with this engine).
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

from .account_judge import AccountJudge
from .backend import Item, MemoryGraph, Stored, Witnesses

__all__ = ["ConsensusBackend", "store_options"]

# Store ids of the per-agent stores (ablation) are made distinct by this shift.
_STORE_SHIFT = 40
#: Stores up to this size are searched exactly (see ``ConsensusBackend``); plays sediment a few thousand.
EXACT_CUTOFF = 1 << 17


def store_options(
    dim: int, judge: Any, candidates: int = 8, min_similarity: float = 0.3, merge_policy: str = "keep_shorter"
) -> dict[str, Any]:
    """How the simulation opens a consensus store, locally or as a Ray actor (the same run either way)."""
    return {
        "dim": dim,
        "judge": judge,
        "candidates": candidates,
        "min_similarity": min_similarity,
        "merge_policy": merge_policy,
        # sync=False: a simulation's store is scratch; a crash loses a run, not a user's data.
        "sync": False,
        # A store of at most this many records finds a deposit's candidates (and an owner's recall)
        # by an exact scan, ties to the lower id: the HNSW graph differs from run to run (parallel
        # inserts), so approximate candidates would make a seeded run irreproducible.
        "exact_cutoff": EXACT_CUTOFF,
        # No lexical candidates, as the paper ran: with the default hashing embedder the vector
        # candidates are the lexical neighbours already (docs/simulation.md).
        "lexical_candidates": 0,
        # The judge sees who reported each candidate: an account in the first person ("I told
        # Ophelia") is said by one of its owners.
        "judge_sees_owners": True,
    }


class ConsensusBackend:
    """``agentsensus.Store`` behind the simulation's memory protocol."""

    name = "consensus"

    def __init__(
        self,
        path: str | Path,
        dim: int,
        *,
        judge: Callable[[list[Any]], list[int | None]] | None = None,
        merging: bool = True,
        candidates: int = 8,
        min_similarity: float = 0.3,
        merge_policy: str = "keep_shorter",
    ) -> None:
        from agentsensus import Store  # the compiled engine, imported only when used

        self._Store = Store
        self.path = Path(path)
        self.dim = dim
        self.judge = judge if judge is not None else AccountJudge()
        self.merging = merging
        self.merge_policy = merge_policy
        self._kw = store_options(dim, self.judge, candidates, min_similarity, merge_policy)
        self.stores: dict[str, Any] = {}
        self.seen: set[str] = set()  # every owner that deposited
        # The store creates its own directory, not missing parents.
        (self.path if not merging else self.path.parent).mkdir(parents=True, exist_ok=True)
        if merging:
            self.stores[""] = Store(str(self.path), **self._kw)

    def _store(self, owner: str) -> Any:
        key = "" if self.merging else owner
        if key not in self.stores:
            self.stores[key] = self._Store(str(self.path / f"agent-{len(self.stores):04d}"), **self._kw)
        return self.stores[key]

    def _base(self, key: str) -> int:
        # Ids of the per-agent stores (ablation) are made distinct by a shift per store.
        return 0 if self.merging else list(self.stores).index(key) << _STORE_SHIFT

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """One ``deposit_many`` per round (per agent store in the ablation)."""
        self.seen.update(o for o, _, _ in items)
        if self.merging:
            deps = self.stores[""].deposit_many([(o, list(s), v) for o, s, v in items], round=round)
            return [([int(i) for i in d.ids], list(d.merged)) for d in deps]
        by_owner: dict[str, list[int]] = {}
        for n, (o, _, _) in enumerate(items):
            by_owner.setdefault(o, []).append(n)
        out: list[Stored] = [([], [])] * len(items)
        for o, positions in by_owner.items():
            store = self._store(o)
            deps = store.deposit_many([(o, list(items[n][1]), items[n][2]) for n in positions], round=round)
            base = self._base(o)
            for n, d in zip(positions, deps):
                out[n] = ([base + int(i) for i in d.ids], list(d.merged))
        return out

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Any]:
        """The store's owner-scoped recall, expansion on."""
        if not self.merging and owner not in self.stores:
            return []
        return list(self._store(owner).recall(owner, np.asarray(query, dtype=np.float32), k=k, expand=True))

    def recall_many(self, queries: Sequence[tuple[str, Any]], k: int) -> list[list[Any]]:
        """``recall`` of every ``(owner, query)``, in order: one
        ``Store.recall_many`` per store (the recalls run across threads)."""
        out: list[list[Any]] = [[] for _ in queries]
        by_store: dict[str, list[int]] = {}
        for n, (owner, _) in enumerate(queries):
            if self.merging or owner in self.stores:
                by_store.setdefault("" if self.merging else owner, []).append(n)
        for key, positions in by_store.items():
            pairs = [(queries[n][0], np.asarray(queries[n][1], dtype=np.float32)) for n in positions]
            for n, mems in zip(positions, self.stores[key].recall_many(pairs, k=k, expand=True)):
                out[n] = list(mems)
        return out

    def stats(self) -> dict[str, int]:
        """The engine's own counters, summed over stores; ``three_plus`` from owner sets."""
        totals = {"records": 0, "shared": 0, "linked": 0, "max_owners": 0, "merges": 0, "deposits": 0}
        for store in self.stores.values():
            st = store.stats()
            for key in ("records", "shared", "linked", "merges", "deposits"):
                totals[key] += int(getattr(st, key))
            totals["max_owners"] = max(totals["max_owners"], int(st.max_owners))
        totals["three_plus"] = sum(1 for o in self.graph().owners.values() if len(o) >= 3)
        return totals

    def records(self) -> int:
        """The number of records, cheaply (for growth per round)."""
        return sum(int(s.stats().records) for s in self.stores.values())

    def graph(self) -> MemoryGraph:
        """Every record with its owner set and affiliation edges, read from the engine."""
        g = MemoryGraph()
        for n, (key, store) in enumerate(self.stores.items()):
            base = n << _STORE_SHIFT if not self.merging else 0
            # The API lists records per owner, so walk every owner of this store.
            ids: set[int] = set()
            for owner in sorted(self.seen) if key == "" else [key]:
                try:
                    ids.update(int(i) for i in store.owned(owner))
                except KeyError:  # an owner this store never saw
                    pass
            for rid in sorted(ids):
                mem = store.get(rid)
                g.owners[base + rid] = frozenset(mem.owners)
                g.rounds[base + rid] = int(mem.round)
                for nb in store.neighbors(rid):
                    g.link(base + rid, base + int(nb))
        return g

    def merge_log(self) -> list[Any]:
        """Every merge the engine logged (survivor, kept, discarded, owner, round)."""
        out: list[Any] = []
        for store in self.stores.values():
            out.extend(store.merges())
        return out

    def fork(self, path: str | Path) -> "ConsensusBackend":
        """A copy of this backend's stores at ``path``, to run on from the same state.

        The stores are closed for the copy (so the files on disk are whole)
        and reopened; the copy starts where this backend is.
        """
        keys = list(self.stores)
        for store in self.stores.values():
            store.close()
        dest = Path(path)
        if self.merging:
            shutil.copytree(self.path, dest)
        else:
            dest.mkdir(parents=True, exist_ok=False)
            for key in keys:
                sub = f"agent-{keys.index(key):04d}"
                shutil.copytree(self.path / sub, dest / sub)
        self.stores = {k: self._Store(str(self._dir(k, keys)), **self._kw) for k in keys}
        twin = ConsensusBackend.__new__(ConsensusBackend)
        twin.__dict__.update({k: v for k, v in self.__dict__.items() if k not in ("stores", "seen", "path")})
        twin.path, twin.seen = dest, set(self.seen)
        try:  # a judge with state of its own (word weights) goes on from the same state, apart
            twin.judge = copy.deepcopy(self.judge)
        except Exception:  # noqa: BLE001 - a judge holding a client or a lock is shared
            twin.judge = self.judge
        twin._kw = dict(self._kw, judge=twin.judge)
        twin.stores = {k: self._Store(str(twin._dir(k, keys)), **twin._kw) for k in keys}
        return twin

    def rejudge(self, wrap: Callable[[Any], Any]) -> None:
        """Reopens the stores judged by ``wrap(judge)`` (a judge that also knows
        the world's state facts, `fact_judge.FactJudge`); closed for it, so the
        files are whole."""
        keys = list(self.stores)
        for store in self.stores.values():
            store.close()
        self.judge = wrap(self.judge)
        self._kw = dict(self._kw, judge=self.judge)
        self.stores = {k: self._Store(str(self._dir(k, keys)), **self._kw) for k in keys}

    def text_of(self, rid: int) -> str:
        """The text of record ``rid`` (as `graph` numbers it)."""
        if self.merging:
            return str(self.stores[""].get(rid).text)
        keys = list(self.stores)
        return str(self.stores[keys[rid >> _STORE_SHIFT]].get(rid & ((1 << _STORE_SHIFT) - 1)).text)

    def _dir(self, key: str, keys: list[str]) -> Path:
        return self.path if self.merging else self.path / f"agent-{keys.index(key):04d}"

    def close(self) -> None:
        """Closes every store; calling it again does nothing."""
        for store in self.stores.values():
            store.close()
        self.stores = {}
