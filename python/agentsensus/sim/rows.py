"""A growable float32 matrix of unit vectors with exact top-k search.

The baselines' recall is an exact scan: one matrix-vector product over the
rows an owner may read, which at simulation sizes (thousands of rows) costs
microseconds and needs no index.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["VectorRows", "top_k"]


class VectorRows:
    """Rows appended in batches; ``matrix`` is a view of the filled part."""

    def __init__(self, dim: int, capacity: int = 256) -> None:
        self.dim = dim
        self._data = np.empty((capacity, dim), dtype=np.float32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def extend(self, vectors: npt.ArrayLike) -> range:
        """Append rows; returns their positions."""
        v = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        need = self._n + len(v)
        if need > len(self._data):
            grown = np.empty((max(need, 2 * len(self._data)), self.dim), dtype=np.float32)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n : need] = v
        start, self._n = self._n, need
        return range(start, need)

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        """The rows so far as one (n, dim) view (no copy)."""
        return self._data[: self._n]


def top_k(scores: npt.NDArray[np.floating], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` largest scores, best first (stable on ties)."""
    if k <= 0 or len(scores) == 0:
        return np.empty(0, dtype=np.intp)
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]
