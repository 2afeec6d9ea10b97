"""The OpenAI embedder: ``embedders.openai(model, ...)`` over an
OpenAI-compatible ``/embeddings`` endpoint (the ``llm`` extra)."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import numpy.typing as npt

from .._store.validation import check_texts
from .client import LLMClient

__all__ = ["OpenAIEmbedder", "openai"]

# Sizes of the OpenAI embedding models, so ``.dim`` needs no request.
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    ``dimensions`` is asked of the API (models that can shorten their
    vectors) and is then the ``dim``; otherwise ``dim`` is known for OpenAI's
    own models and found by embedding one probe text for any other. Texts go
    in requests of at most ``batch_size``. ``client`` is the
    `LLMClient` (timeouts, retries, counters).
    """

    def __init__(self, client: "LLMClient", *, dimensions: Optional[int] = None, batch_size: int = 256) -> None:
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions <= 0
        ):
            raise ValueError(f"dimensions must be a positive int, got {dimensions!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.client = client
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._dim: Optional[int] = dimensions or _OPENAI_DIMS.get(client.model)
        #: "openai:MODEL"; None with dimensions (the name does not say them).
        self.name: Optional[str] = f"openai:{client.model}" if dimensions is None else None

    @property
    def dim(self) -> int:
        """The vector size (one probe request when it is not known)."""
        if self._dim is None:
            self._dim = int(self.client.embed(["dimension probe"], dimensions=self.dimensions).shape[1])
        return self._dim

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batch = check_texts(texts)
        parts = [
            self.client.embed(batch[i : i + self.batch_size], dimensions=self.dimensions)
            for i in range(0, len(batch), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.concatenate(parts, axis=0)
        if out.shape[1] != self.dim:
            raise ValueError(f"{self.client.model} returned {out.shape[1]}-d vectors, expected dim={self.dim}")
        return out

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.client.model!r}, dim={self._dim})"


def openai(
    model: str,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    *,
    dimensions: Optional[int] = None,
    batch_size: int = 256,
    timeout: float = 60.0,
    retries: int = 3,
    backoff: float = 0.5,
) -> OpenAIEmbedder:
    """An embedder over an OpenAI-compatible ``/embeddings`` endpoint (the
    ``llm`` extra); see `OpenAIEmbedder`."""
    client = LLMClient(model, base_url=base_url, api_key=api_key, timeout=timeout, retries=retries, backoff=backoff)
    return OpenAIEmbedder(client, dimensions=dimensions, batch_size=batch_size)
