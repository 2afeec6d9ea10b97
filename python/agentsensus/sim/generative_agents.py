"""Generative Agents (Park et al., 2023) as a memory backend.

Each agent has a private memory stream. Retrieval scores every row of the
owner's stream by recency (exponential decay since last access), importance
and relevance (cosine), each min-max normalised over the stream, and returns
the top ``k``. When the importance an agent has taken in since its last
reflection crosses a threshold, it reflects: new rows that cite their
evidence rows. Importance and reflection come through callables; the
defaults are deterministic stand-ins for the paper's LLM prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .backend import Item, MemoryGraph, Recollection, Stored, Witnesses, owner_stats
from .rows import VectorRows, top_k
from .words import content_words, top_words

__all__ = ["GenerativeAgentsBackend", "default_importance", "default_reflect"]

# Words that make an observation poignant in a tragedy (a stand-in for the
# paper's "rate the poignancy 1-10" prompt).
_GRAVE = frozenset(
    "death dead die dy murder kill slain poison ghost blood grave revenge sword stab wound fall mad madnes".split()
)
_WARM = frozenset("love heart dear sweet father mother son daughter king queen".split())


def default_importance(text: str) -> float:
    """A deterministic poignancy score in [1, 10]."""
    words = content_words(text)
    score = 2.0 + 3.0 * len(words & _GRAVE) + 1.0 * len(words & _WARM)
    score += 1.0 if "!" in text else 0.0
    score += 1.0 if text.startswith("What was done to me") else 0.0
    return float(min(10.0, score))


def default_reflect(texts: Sequence[str]) -> list[tuple[str, list[int]]]:
    """One insight over recent rows: what they keep returning to, with evidence.

    Returns (statement, indexes into ``texts`` that support it).
    """
    topics = top_words(texts, 3)
    if not topics:
        return []
    evidence = [i for i, t in enumerate(texts) if content_words(t) & set(topics)][:10]
    return [(f"Reflection: much of what I have seen lately concerns {', '.join(topics)}.", evidence)]


@dataclass
class _Stream:
    rows: VectorRows
    ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    importance: list[float] = field(default_factory=list)
    last_access: list[int] = field(default_factory=list)
    since_reflection: list[int] = field(default_factory=list)  # stream positions
    pending_importance: float = 0.0


class GenerativeAgentsBackend:
    """Private per-agent streams with recency/importance/relevance retrieval."""

    name = "generative_agents"

    def __init__(
        self,
        embed: Callable[[list[str]], npt.NDArray[np.float32]],
        dim: int,
        *,
        importance: Callable[[str], float] = default_importance,
        reflect: Callable[[Sequence[str]], list[tuple[str, list[int]]]] = default_reflect,
        reflection_threshold: float = 60.0,
        decay: float = 0.99,
        weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
    ) -> None:
        self.embed, self.dim = embed, dim
        self.importance, self.reflect = importance, reflect
        self.reflection_threshold, self.decay, self.weights = reflection_threshold, decay, weights
        self.streams: dict[str, _Stream] = {}
        self.graph_ = MemoryGraph()
        self.reflections = 0
        self.now = 0
        self._next_id = 1

    def _stream(self, owner: str) -> _Stream:
        if owner not in self.streams:
            self.streams[owner] = _Stream(VectorRows(self.dim))
        return self.streams[owner]

    def _append(self, s: _Stream, owner: str, texts: Sequence[str], vectors: npt.ArrayLike, round: int) -> list[int]:
        s.rows.extend(vectors)
        ids = list(range(self._next_id, self._next_id + len(texts)))
        self._next_id += len(texts)
        for i, t in zip(ids, texts):
            s.ids.append(i)
            s.texts.append(t)
            s.rounds.append(round)
            s.importance.append(float(self.importance(t)))
            s.last_access.append(round)
            self.graph_.owners[i] = frozenset((owner,))
            self.graph_.rounds[i] = round
        return ids

    def remember(self, items: Sequence[Item], round: int, witnesses: Witnesses | None = None) -> list[Stored]:
        """Append each statement as an observation; reflect where due."""
        self.now = round
        out: list[Stored] = []
        for owner, statements, vectors in items:
            s = self._stream(owner)
            start = len(s.ids)
            ids = self._append(s, owner, statements, vectors, round)
            out.append((ids, [False] * len(ids)))
            s.since_reflection.extend(range(start, len(s.ids)))
            s.pending_importance += sum(s.importance[start:])
            if s.pending_importance >= self.reflection_threshold:
                self._reflect(s, owner, round)
        return out

    def _reflect(self, s: _Stream, owner: str, round: int) -> None:
        window = s.since_reflection[-30:]
        insights = self.reflect([s.texts[p] for p in window])
        s.pending_importance, s.since_reflection = 0.0, []
        if not insights:
            return
        texts = [t for t, _ in insights]
        ids = self._append(s, owner, texts, self.embed(texts), round)
        for new_id, (_, evidence) in zip(ids, insights):
            for e in evidence:
                self.graph_.point(new_id, s.ids[window[e]])  # evidence, not affiliation
        self.reflections += len(ids)

    def recall(self, owner: str, query: npt.NDArray[np.float32], k: int = 5) -> list[Recollection]:
        """Top ``k`` by recency + importance + relevance, each min-max normalised."""
        s = self.streams.get(owner)
        if s is None or not s.ids:
            return []
        relevance = s.rows.matrix @ np.asarray(query, dtype=np.float32)
        recency = self.decay ** (self.now - np.asarray(s.last_access, dtype=np.float64))
        importance = np.asarray(s.importance, dtype=np.float64)
        a, b, c = self.weights
        score = a * _minmax(recency) + b * _minmax(importance) + c * _minmax(relevance.astype(np.float64))
        hits = top_k(score, k)
        out = []
        for p in hits:
            s.last_access[p] = self.now  # retrieval refreshes recency, as in the paper
            out.append(Recollection(s.ids[p], s.texts[p], frozenset((owner,)), s.rounds[p], float(score[p])))
        return out

    def stats(self) -> dict[str, int]:
        """Row counts: ``records``, ``shared``, ``three_plus``, ``max_owners``, ``linked``."""
        st = owner_stats(self.graph_)
        st["reflections"] = self.reflections
        return st

    def graph(self) -> MemoryGraph:
        """Every row with its owner and links."""
        return self.graph_

    def close(self) -> None:
        """Nothing to release: the streams live in memory."""
        pass


def _minmax(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    span = float(x.max() - x.min()) if len(x) else 0.0
    return (x - x.min()) / span if span > 1e-12 else np.zeros_like(x)
