"""Witness accounts differ in wording; the content judge still finds one fact."""

from __future__ import annotations

from types import SimpleNamespace as NS

from hypothesis import given
from hypothesis import strategies as st

from agentsensus.sim.accounts import account, split_statements
from agentsensus.sim.judge import ContentJudge
from agentsensus.sim.world import Event


def say(text: str, speaker: str = "Hamlet", witnesses=("Hamlet", "Horatio"), targets=(), aside=False) -> Event:  # type: ignore[no-untyped-def]
    return Event(0, 1, "say", "the platform", (speaker,), text, tuple(targets), tuple(witnesses), aside)


def test_speaker_and_listener_word_it_differently() -> None:
    ev = say("The ghost walks upon the platform tonight.")
    assert account(ev, "Hamlet") == ['I told Horatio: "The ghost walks upon the platform tonight."']
    assert account(ev, "Horatio") == ['Hamlet told me: "The ghost walks upon the platform tonight."']


def test_overhearer_and_crowd_frames() -> None:
    ev = say("Go to the castle now, good friend.", witnesses=("Hamlet", "Horatio", "Marcellus"), targets=("Horatio",))
    assert account(ev, "Marcellus")[0].startswith("I heard Hamlet tell Horatio:")
    crowd = say("Welcome to you all, my good friends.", witnesses=("Hamlet", "A", "B", "C"))
    assert account(crowd, "Hamlet")[0].startswith("I told them:")
    assert account(crowd, "B")[0].startswith("Hamlet told us:")


def test_moves_and_acts() -> None:
    enter = Event(1, 1, "enter", "A hall in the castle", ("Hamlet", "Laertes"), "", (), ("Osric", "Hamlet", "Laertes"))
    assert account(enter, "Hamlet") == ["I entered a hall in the castle with Laertes."]
    assert account(enter, "Osric") == ["I saw Hamlet and Laertes enter a hall in the castle."]
    blow = Event(2, 1, "act", "A hall", ("Laertes",), "Laertes wounds Hamlet.", ("Hamlet",), ("Laertes", "Hamlet", "Osric"))
    assert [account(blow, w)[0].split(":")[0] for w in ("Laertes", "Hamlet", "Osric")] == [
        "What I did", "What was done to me", "What I saw"]


def test_split_statements_joins_short_clauses() -> None:
    assert split_statements("Who's there?") == ["Who's there?"]
    parts = split_statements("Seems, madam! nay it is; I know not 'seems.' 'Tis not alone my inky cloak, good mother.")
    assert parts == ["Seems, madam! nay it is;", "I know not 'seems.'", "'Tis not alone my inky cloak, good mother."]
    assert split_statements("... --") == []


def cands(*texts: str):  # type: ignore[no-untyped-def]
    return [NS(id=i + 10, text=t, score=0.9 - i * 0.01) for i, t in enumerate(texts)]


def test_judge_merges_perspectives_of_one_speech() -> None:
    j = ContentJudge()
    c = cands('I told Horatio: "The ghost walks upon the platform tonight."')
    assert j.choose('Hamlet told me: "The ghost walks upon the platform tonight."', c) == 10


def test_judge_keeps_different_speech_and_kinds_apart() -> None:
    j = ContentJudge()
    assert j.choose('Hamlet told me: "The king drinks deep tonight."', cands('Hamlet told me: "The ghost walks tonight."')) is None
    # A quotation never merges with a plain report of the same words.
    assert j.choose("The ghost walks upon the platform tonight.",
                    cands('Hamlet told me: "The ghost walks upon the platform tonight."')) is None
    # Plain reports naming different people are different facts.
    assert j.choose("I saw Ghost enter Elsinore, a platform before the castle.",
                    cands("I entered Elsinore, a platform before the castle with Francisco.")) is None
    assert j.choose("Lord lives in this world.", cands("Lord Polonius lives in this world.")) is None


def test_judge_prefers_the_closest_candidate_and_is_batched() -> None:
    j = ContentJudge()
    c = cands('Hamlet told us: "The ghost walks upon the platform."',
              'Hamlet told us: "The ghost walks upon the platform tonight."')
    reqs = [NS(statement='I told them: "The ghost walks upon the platform tonight."', owner="Hamlet", candidates=c),
            NS(statement="Nothing alike at all here.", owner="Hamlet", candidates=c),
            NS(statement="x", owner="Hamlet", candidates=[])]
    assert j(reqs) == [11, None, None]


words = st.sampled_from("ghost king night platform castle sword poison crown father mother grave".split())


@given(st.lists(words, min_size=1, max_size=6), st.lists(st.lists(words, min_size=1, max_size=6), max_size=5))
def test_judge_answers_none_or_a_candidate(statement, candidates) -> None:  # type: ignore[no-untyped-def]
    c = cands(*(" ".join(w) for w in candidates))
    got = ContentJudge().choose(" ".join(statement), c)
    assert got is None or got in {x.id for x in c}
    if c and " ".join(statement) == c[0].text:
        assert got is not None  # identical text is always the same fact
