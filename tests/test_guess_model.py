"""GuessModel.refit (the passes' guess of the judge's cut) equals the
direct count of wrong guesses at every cut, over the last ``keep`` answers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from agentsensus._deposit.passes import GuessModel
from hypothesis import given, settings
from hypothesis import strategies as st


def reference_cut(samples: list[tuple[float, bool]]) -> float:
    """The lowest cut with the fewest wrong guesses, counted cut by cut."""
    scores = sorted({s for s, _ in samples})
    best, cut = None, math.inf
    for c in scores + [math.inf]:
        # "named" from c on: wrong for the named below c and the unnamed at or above it
        wrong = sum(1 for s, h in samples if (s < c and h) or (s >= c and not h))
        if best is None or wrong < best:
            best, cut = wrong, c
    return cut


def request(score: float, named: bool) -> tuple[SimpleNamespace, int | None]:
    best = SimpleNamespace(id=7, score=score)
    return SimpleNamespace(candidates=[best]), (7 if named else None)


scores = st.one_of(st.sampled_from([0.1, 0.5, 0.5, 0.9, -math.inf, math.nan]), st.floats(-1, 1))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(scores, st.booleans()), max_size=60), st.integers(1, 40))
def test_refit_is_the_counted_best_cut(answers: list[tuple[float, bool]], keep: int) -> None:
    model = GuessModel(keep=keep)
    for s, named in answers:
        model.learn(*request(s, named))
    model.refit()
    # the model scores a missing or NaN score as -inf, and keeps the last keep answers
    kept = [(-math.inf if s != s else s, named) for s, named in answers][-keep:]
    assert model.cut == reference_cut(kept)


def test_no_answers_guess_new_after_refit_and_best_before() -> None:
    model = GuessModel()
    assert model.cut == -math.inf
    model.refit()
    assert model.cut == math.inf


def test_a_guess_uses_every_answer_learned_without_a_refit_call() -> None:
    # names() refits when answers arrived since the last refit (lazily: a
    # single deposit never guesses, so it never pays for a refit).
    model = GuessModel()
    for s, named in [(0.9, True), (0.8, True), (0.2, False), (0.1, False)]:
        model.learn(*request(s, named))
    assert model.names(SimpleNamespace(score=0.85)) and not model.names(SimpleNamespace(score=0.15))
    assert model.cut == reference_cut([(0.9, True), (0.8, True), (0.2, False), (0.1, False)])
    for s in (0.95, 0.99):  # now even the best scores go unnamed: the cut moves above them
        for _ in range(5):
            model.learn(*request(s, False))
    assert not model.names(SimpleNamespace(score=0.9))
