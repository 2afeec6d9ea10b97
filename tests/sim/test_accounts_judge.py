"""Witnesses word one event in their own words (seeded); the text-only judge still finds one fact."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
from agentsensus.sim.account_judge import AccountJudge
from agentsensus.sim.accounts import account, split_statements
from agentsensus.sim.variation import Variation
from agentsensus.sim.wording import read
from agentsensus.sim.world import Event
from hypothesis import given
from hypothesis import strategies as st

SPEECH = (
    "Thou art a scholar, speak to it, Horatio. Look, my lord, it comes, and with a face of sorrow. "
    "Good night, sweet prince, and flights of angels sing thee to thy rest!"
)
CROWD = ("Hamlet", "Horatio", "Marcellus", "Bernardo", "Francisco", "Reynaldo")


def say(text: str = SPEECH, speaker: str = "Hamlet", witnesses=CROWD, targets=(), seq: int = 3) -> Event:  # type: ignore[no-untyped-def]
    return Event(seq, 0, "say", "the platform", (speaker,), text, tuple(targets), tuple(witnesses), when="scene 1")


def texts(ev: Event, v: Variation) -> dict[str, list[str]]:
    return {w: [t for t, _ in account(ev, w, v)] for w in ev.witnesses}


def test_strength_zero_words_every_account_the_same_way() -> None:
    got = texts(say(), Variation(0.0, seed=1, timestamps=True))
    assert got["Horatio"] == got["Marcellus"]
    assert all(f'"{s}"' in got["Horatio"][i] for i, s in enumerate(split_statements(SPEECH)))
    assert got["Hamlet"][0].startswith("In scene 1, I told them:")
    assert texts(say(), Variation(0.0, seed=1))["Hamlet"][0].startswith('I told them: "')


def test_variation_is_seeded_reproducible_and_differs_between_witnesses() -> None:
    a, b = texts(say(), Variation(0.8, seed=7)), texts(say(), Variation(0.8, seed=7))
    assert a == b  # same seed, same words
    assert texts(say(), Variation(0.8, seed=8)) != a
    # Six witnesses of one speech do not all say it alike.
    assert len({tuple(v) for v in a.values()}) >= 4
    # Clauses are left out now and then, but every statement keeps its clause index (provenance).
    for w in CROWD:
        clauses = [c for _, c in account(say(), w, Variation(0.8, seed=7))]
        assert clauses and clauses == sorted(set(clauses)) and max(clauses) < 3


@pytest.mark.slow
@given(st.integers(0, 10_000), st.floats(0.0, 1.0), st.booleans())
def test_every_account_has_words_and_a_readable_core(seed: int, strength: float, timestamps: bool) -> None:
    v = Variation(strength, seed, timestamps=timestamps)
    for ev in (
        say(),
        Event(4, 0, "enter", "A room in the castle", ("Hamlet", "Horatio"), "", (), CROWD, when="scene 2"),
        Event(
            5,
            0,
            "act",
            "A hall",
            ("Laertes",),
            "Laertes wounds Hamlet.",
            ("Hamlet",),
            ("Laertes", "Hamlet", "Osric"),
            when="scene 20",
        ),
    ):
        for w in ev.witnesses:
            for text, _ in account(ev, w, v):
                r = read(text)
                assert r.core and any(c.isalpha() for c in r.core)
                assert r.time == (("scene", int(ev.when.split()[1])) if timestamps else None), text


def test_moves_name_the_mover_in_every_perspective() -> None:
    ev = Event(4, 0, "enter", "A room in the castle", ("Hamlet",), "", (), ("Osric", "Hamlet"), when="round 2")
    own = account(ev, "Hamlet", Variation(0.0, timestamps=True))[0][0]
    seen = account(ev, "Osric", Variation(0.0, timestamps=True))[0][0]
    assert own == "In round 2, Hamlet entered a room in the castle."
    assert seen == "In round 2, I saw Hamlet enter a room in the castle."
    assert account(ev, "Osric", Variation(0.0))[0][0] == "I saw Hamlet enter a room in the castle."


def cands(*texts: str):  # type: ignore[no-untyped-def]
    return [NS(id=i + 10, text=t, score=0.9 - i * 0.01) for i, t in enumerate(texts)]


def test_judge_merges_perspectives_and_retellings() -> None:
    j = AccountJudge()
    c = cands('In scene 1, I told Horatio: "The ghost walks upon the platform tonight."')
    assert j.choose('"The ghost walks upon the platform tonight", Hamlet said to me in scene 1.', c) == 10
    # A retelling in a later round quotes the original with its own time: the same fact.
    assert (
        j.choose(
            'In round 4, Horatio told me: "In scene 1, Hamlet said: The ghost walks upon the platform tonight."', c
        )
        == 10
    )
    move = cands("In round 3, I saw Osric enter the hall.")
    assert j.choose("In round 3, Osric entered the hall.", move) == 10


def test_judge_keeps_different_facts_apart() -> None:
    j = AccountJudge()
    # Another time, another mover, the opposite move: three other facts.
    base = cands("In round 3, I saw Osric enter the hall.")
    assert j.choose("In round 4, I saw Osric enter the hall.", base) is None
    assert j.choose("In round 3, I saw Horatio enter the hall.", base) is None
    assert j.choose("In round 3, I saw Osric exit the hall.", base) is None
    assert (
        j.choose(
            'In scene 1, Hamlet told me: "The king drinks deep tonight."',
            cands('In scene 1, Hamlet told me: "The ghost walks tonight."'),
        )
        is None
    )


def test_judge_prefers_the_closest_candidate_and_reads_text_only() -> None:
    j = AccountJudge()
    c = cands(
        'In scene 1, Hamlet told us: "The ghost walks upon the platform."',
        'In scene 1, Hamlet told us: "The ghost walks upon the platform tonight."',
    )
    reqs = [
        NS(
            statement='In scene 1, I told them: "The ghost walks upon the platform tonight."',
            owner="Hamlet",
            candidates=c,
        ),
        NS(statement="Nothing alike at all here.", owner="Hamlet", candidates=c),
        NS(statement="x", owner="Hamlet", candidates=[]),
    ]
    assert j(reqs) == [11, None, None]
    assert j.calls == 1 and j.requests == 3


words = st.sampled_from("ghost king night platform castle sword poison crown father mother grave".split())


@given(st.lists(words, min_size=1, max_size=6), st.lists(st.lists(words, min_size=1, max_size=6), max_size=5))
def test_judge_answers_none_or_a_candidate(statement, candidates) -> None:  # type: ignore[no-untyped-def]
    c = cands(*(" ".join(w) for w in candidates))
    got = AccountJudge().choose(" ".join(statement), c)
    assert got is None or got in {x.id for x in c}
    if c and " ".join(statement) == c[0].text:
        assert got is not None  # identical text is always the same fact


def test_with_a_sentence_model_high_scores_admit_paraphrases() -> None:
    para = [NS(id=10, text='In scene 1, Hamlet told me: "The spirit strolls along the battlements."', score=0.93)]
    statement = 'In scene 1, I told Horatio: "The ghost walks along the platform."'
    assert AccountJudge().choose(statement, para) is None  # one shared word is too little for words alone
    assert AccountJudge(use_scores=True).choose(statement, para) == 10
    para[0].score = 0.5
    assert AccountJudge(use_scores=True).choose(statement, para) is None


@given(
    st.integers(0, 10_000),
    st.sampled_from(
        [
            "In round 2, Osric entered Elsinore, a platform before the castle.",
            "In scene 7, Lord Polonius entered a room in the castle.",
            "In scene 9, Lucianus said: Thoughts black, hands apt, drugs fit.",
            "In round 4, Hamlet takes Horatio aside about ghost.",
        ]
    ),
)
def test_a_retelling_is_never_cut_down_to_its_time(seed: int, retold: str) -> None:
    # Leaving out the last comma-separated part of a retold move once left "In scene 7.": no fact at all.
    ev = Event(40 + seed % 7, 5, "say", "the hall", ("Horatio",), retold, ("Bernardo",), CROWD[:4], when="round 5")
    for w, stmts in texts(ev, Variation(1.0, seed=seed)).items():
        assert stmts, w
        for s in stmts:
            r = read(s)
            assert r.time is not None and r.time[0] == retold.split()[1] and len(r.core.split()) >= 2, (w, s)
