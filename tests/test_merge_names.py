"""Names that survive a merge: keep_names is the default policy, it loses no
capitalised name when one text's names cover the other's, and the merge log
keeps the text let go of."""

from __future__ import annotations

from agentsensus import Store, judges, policies
from helpers import DIM, near, unit
from hypothesis import given
from hypothesis import strategies as st

NAMES = ["Hamlet", "Horatio", "Ophelia", "Osric"]
words = st.lists(st.sampled_from(NAMES + ["saw", "the", "ghost", "wall", "at", "night", "fled"]), min_size=1)
text = words.map(" ".join)


def test_the_default_policy_keeps_the_name(store_path):
    named = "Horatio saw the ghost on the wall at night"
    nameless = "the ghost was seen on the wall"  # shorter: keep_shorter would keep it
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5) as s:
        a = s.deposit("a", [named], unit(1)[None])
        b = s.deposit("b", [nameless], near(unit(1), 2)[None])
        assert b.ids == a.ids and b.merged == [True]
        assert s.get(a.ids[0]).text == named
        [m] = list(s.merges())
        assert (m.kept, m.discarded, m.owner) == (named, nameless, "b")  # the log keeps what was let go of


def test_keep_shorter_stays_available_by_name(store_path):
    with Store(store_path, dim=DIM, judge=judges.threshold(0.5), min_similarity=0.5, merge_policy="keep_shorter") as s:
        a = s.deposit("a", ["Horatio saw the ghost on the wall"], unit(1)[None])
        s.deposit("b", ["a ghost on the wall"], near(unit(1), 2)[None])
        assert s.get(a.ids[0]).text == "a ghost on the wall"


@given(existing=text, incoming=text)
def test_keep_names_loses_no_name_when_one_side_covers_the_other(existing, incoming):
    out = policies.keep_names(existing, incoming)
    assert out in (existing, incoming)
    ne, ni = policies.capitalised_names(existing), policies.capitalised_names(incoming)
    if ne <= ni or ni <= ne:
        assert policies.capitalised_names(out) == ne | ni
        if ne == ni:  # nothing to lose: the paper's choice
            assert out == policies.keep_shorter(existing, incoming)
    else:
        assert out == existing  # neither covers: the record keeps its text


def test_capitals_for_emphasis_are_no_name() -> None:
    # "DEAD" is shouting, not a person: the texts hold the same names, so the record keeps its own.
    assert policies.capitalised_names("the king is DEAD.") == frozenset()
    assert policies.keep_names("The king is dead.", "the king is DEAD.") == "The king is dead."
    assert policies.capitalised_names("I saw Hamlet, and O the ghost") == frozenset({"Hamlet"})
