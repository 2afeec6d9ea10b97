"""The references the engine's lexical weighing is held to
(python/agentsensus/_deposit/lexical_candidates.py says what they mean):
``weighed_queries``, a statement's query and least score under
``lexical_floor``, and ``mutual_coverage``, a hit's mutual coverage. The
engine does both itself (``Engine.lexical(..., floor, mutual)``); these
compute the same numbers from ``Engine.lexical_word_counts``, so the
property tests can compare them."""

from __future__ import annotations

import math

# A hit scoring more than this share of the statement's best needs no mutual coverage (kMostOf in
# cpp/src/store/store_lexical.cpp)
MOST_OF = 0.5
# BM25's constants as the engine scores with them (cpp/src/lexical/lexical_index.hpp)
K1, B = 1.2, 0.75
# (records, mean length, per text [(word, count in the text, records holding it)]): Engine.lexical_word_counts
WordCounts = tuple[float, float, list[list[tuple[bytes, int, float]]]]


def weighed_queries(counts: WordCounts, floor: float) -> tuple[list[bytes], list[float]]:
    """Per text: its query (its words less those most of the scope holds,
    which then weigh nothing) and the least BM25 score a lexical hit needs:
    ``floor`` times the text's best possible score, that of its own text as
    a record of the scope (a word no record holds counted as held by one)."""
    docs, avgdl, per_text = counts
    queries: list[bytes] = []
    floors: list[float] = []
    for words in per_text:
        length = sum(tf for _, tf, _ in words)
        kept: list[bytes] = []
        best = 0.0
        for word, tf, df in words:
            if df > 1 and df > docs / 2:
                continue  # more than half of the scope's records (and more than one) hold it: no weight
            held = max(df, 1.0)  # a word no record holds: as the one record that would hold it
            idf = math.log(1 + (docs - held + 0.5) / (held + 0.5))
            best += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))
            kept.append(word)
        queries.append(b" ".join(kept))
        floors.append(floor * best)
    return queries, floors


def mutual_coverage(counts: WordCounts, ours: list[list[float]]) -> list[list[float]]:
    """Per statement, per hit, their mutual coverage: counts holds the
    scope's word counts (``Engine.lexical_word_counts``) of each statement
    followed by its hits, ours each hit's share of its statement's best
    score (the engine's BM25 score over the best). The coverage is the
    geometric mean of that share and the statement's share of the hit's
    best score (the statement scored as a record for the hit's words, over
    the hit's own text's score), each at most 1; 0 when the hit's best is
    0."""
    docs, avgdl, per_text = counts
    idf: dict[bytes, float] = {}  # the scope's weight of each word seen (the same df in every text)
    out: list[list[float]] = []
    at = 0
    for shares in ours:
        held: dict[bytes, int] = {}
        length = 0
        for word, tf, _ in per_text[at]:
            held[word] = tf
            length += tf
        norm = K1 * (1 - B + B * length / avgdl)  # the statement as a record of this length
        row: list[float] = []
        for n, share in enumerate(shares):
            words = per_text[at + 1 + n]
            own_norm = K1 * (1 - B + B * sum(tf for _, tf, _ in words) / avgdl)
            own = theirs = 0.0
            for word, tf, df in words:
                w = idf.get(word)
                if w is None:
                    # as the engine weighs it: nothing for a word most of the scope holds (and more than one record)
                    held_by = max(df, 1.0)
                    w = 0.0 if df > 1 and df > docs / 2 else math.log(1 + (docs - held_by + 0.5) / (held_by + 0.5))
                    idf[word] = w
                if w > 0:
                    own += w * tf * (K1 + 1) / (tf + own_norm)
                    t = held.get(word)
                    if t:
                        theirs += w * t * (K1 + 1) / (t + norm)
            row.append(math.sqrt(min(share, 1.0) * min(theirs / own, 1.0)) if own > 0 else 0.0)
        out.append(row)
        at += 1 + len(shares)
    return out
