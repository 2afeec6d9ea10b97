"""The consensus backend: this project's engine, ``agentsensus.Store``.

Witnesses of one event deposit their own accounts; the judge merges a
statement into an equivalent record, whose owner set becomes the union of its
witnesses, and the statements of one deposit are joined by affiliation edges.
A round is one ``deposit_many`` (one transaction). Recall is the store's
owner-scoped search with one hop of expansion.

``merging=False`` is the paper's ablation: each agent writes to a store of
its own, so no statement can merge with another agent's and nothing is shared
(an agent's repeats of its own exact words may still merge, as they would in
any per-agent store with this engine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

from .backend import Item, MemoryGraph
from .judge import ContentJudge

__all__ = ["ConsensusBackend"]

# Store ids of the per-agent stores (ablation) are made distinct by this shift.
_STORE_SHIFT = 40


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
        min_similarity: float = 0.4,
    ) -> None:
        from agentsensus import Store  # the compiled engine, imported only when used

        self._Store = Store
        self.path = Path(path)
        self.dim = dim
        self.judge = judge if judge is not None else ContentJudge()
        self.merging = merging
        self._kw: dict[str, Any] = {"dim": dim, "judge": self.judge, "candidates": candidates, "min_similarity": min_similarity}
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

    def remember(self, items: Sequence[Item], round: int) -> None:
        """One ``deposit_many`` per round (per agent store in the ablation)."""
        self.seen.update(o for o, _, _ in items)
        if self.merging:
            self.stores[""].deposit_many([(o, list(s), v) for o, s, v in items], round=round)
            return
        by_owner: dict[str, list[tuple[str, list[str], Any]]] = {}
        for o, s, v in items:
            by_owner.setdefault(o, []).append((o, list(s), v))
        for o, batch in by_owner.items():
            self._store(o).deposit_many(batch, round=round)

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Any]:
        """The store's owner-scoped recall, expansion on."""
        if not self.merging and owner not in self.stores:
            return []
        return list(self._store(owner).recall(owner, np.asarray(query, dtype=np.float32), k=k, expand=True))

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
                for nb in store.neighbors(rid):
                    g.link(base + rid, base + int(nb))
        return g

    def merge_log(self) -> list[Any]:
        """Every merge the engine logged (survivor, kept, discarded, owner, round)."""
        out: list[Any] = []
        for store in self.stores.values():
            out.extend(store.merges())
        return out

    def close(self) -> None:
        """Closes every store; calling it again does nothing."""
        for store in self.stores.values():
            store.close()
        self.stores = {}
