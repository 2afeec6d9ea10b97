"""Embedders: callables ``list[str] -> float32 array (n, dim)`` with a ``.dim``.

``hash`` is the default and needs nothing beyond numpy: a signed feature-hashing
embedder over word unigrams and bigrams. It is deterministic across processes
and machines (crc32, not Python's salted ``hash``), so a store written by one
run can be recalled by another.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from typing import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["HashEmbedder", "hash"]

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
