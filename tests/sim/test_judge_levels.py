"""Witnesses paraphrase, time stamps are optional, and the judge is measured per variation level and on pairs."""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

from agentsensus.sim.account_judge import AccountJudge
from agentsensus.sim.accounts import account, split_statements
from agentsensus.sim.consensus import ConsensusBackend
from agentsensus.sim.judge_curve import judge_curve
from agentsensus.sim.judge_pairs import KINDS, build_pairs, judge_pairs, score_pairs
from agentsensus.sim.kernel import Kernel
from agentsensus.sim.memory_policy import MemoryPolicy
from agentsensus.sim.paraphrase import indirect
from agentsensus.sim.sediment import SourceReplay, replay_source
from agentsensus.sim.variation import Variation
from agentsensus.sim.wording import REPORTED, TIME, read
from agentsensus.sim.world import Event, World


def _source(play):  # type: ignore[no-untyped-def]
    world = World.of(play.title, play.cast, play.places)
    return world, replay_source(play, world)


def _accounts(replay, v: Variation) -> list[tuple[Event, str, str, int]]:  # type: ignore[no-untyped-def]
    return [(e, w, t, c) for b in replay.batches for e in b for w in e.witnesses for t, c in account(e, w, v)]


def _always(_: random.Random, p: float) -> bool:
    return True


def _never(_: random.Random, p: float) -> bool:
    return False


def test_indirect_speech_shifts_pronouns_tense_and_reads_back() -> None:
    rng = random.Random(0)
    clause, kind = indirect("I will go to England.", rng, _never, speaker="Hamlet", addressee="I")
    assert (clause, kind) == ("he would go to England", "that")
    clause, kind = indirect("Will you go with me?", rng, _never, speaker="Queen Gertrude", addressee="I")
    assert (clause, kind) == ("whether I would go with her", "ask")
    clause, kind = indirect("O, my lord, speak to it, Horatio!", rng, _never, speaker="I", addressee="Horatio")
    assert (clause, kind) == ("speak to it", "to")  # the interjection and the forms of address dropped
    r = read("Hamlet told me that he would go to England.")
    assert r.quoted and r.core == "he would go to England" and r.names == {"England"} and r.time is None
    # Synonyms from the wider table when the draw says so.
    assert "monarch" in indirect("The king drinks deep.", rng, _always, speaker="Hamlet", addressee=None)[0]


def test_paraphrase_appears_above_variation_zero_and_never_at_it(tiny_play) -> None:  # type: ignore[no-untyped-def]
    _, replay = _source(tiny_play)
    for level in (0.0, 0.5, 1.0):
        got = _accounts(replay, Variation(level, seed=2))
        says = [(e, w, t, c) for e, w, t, c in got if e.kind == "say"]
        reported = [t for _, _, t, _ in says if '"' not in t]
        if level == 0.0:
            assert says and not reported  # exact quotations only
        else:
            assert reported, level
            for t in reported:
                assert REPORTED.match(t) and read(t).quoted and read(t).core, t
        # Provenance: every statement names a clause of its speech.
        for e, _, _, c in says:
            assert 0 <= c < max(1, len(split_statements(e.text)))
    share = [
        sum('"' not in t for e, _, t, _ in _accounts(replay, Variation(s, seed=2)) if e.kind == "say")
        for s in (0.5, 1.0)
    ]
    assert share[0] < share[1]  # the share of paraphrase grows with the variation


def test_time_phrases_only_with_time_stamps(tiny_play) -> None:  # type: ignore[no-untyped-def]
    _, replay = _source(tiny_play)
    for level in (0.0, 1.0):
        plain = _accounts(replay, Variation(level, seed=1))
        assert plain and all(TIME.search(t) is None and read(t).time is None for _, _, t, _ in plain)
        stamped = _accounts(replay, Variation(level, seed=1, timestamps=True))
        assert all(read(t).time == ("scene", int(e.when.split()[1])) for e, _, t, _ in stamped)


def test_the_judge_uses_a_time_only_when_both_texts_have_one() -> None:
    j = AccountJudge()
    c = [NS(id=10, text='I told Horatio: "The ghost walks upon the platform tonight."', score=0.9)]
    assert j.choose('In scene 1, Hamlet told me: "The ghost walks upon the platform tonight."', c) == 10
    c[0].text = 'In scene 2, I told Horatio: "The ghost walks upon the platform tonight."'
    assert j.choose('In scene 1, Hamlet told me: "The ghost walks upon the platform tonight."', c) is None


def test_witnesses_of_one_speech_merge_without_time_stamps(tiny_play, embed, tmp_path) -> None:  # type: ignore[no-untyped-def]
    world, replay = _source(tiny_play)
    backend = ConsensusBackend(tmp_path / "c", embed.dim, judge=AccountJudge())
    try:
        k = Kernel(world, MemoryPolicy(0), backend, embed, variation=Variation(0.0, 0))
        k.sediment(replay.batches)
        texts = [t for a in k.logs[0].events for w in a.witnesses for t, _ in account(a, w, k.variation)]
        assert texts and all(read(t).time is None for t in texts)
        says = [e for e in k.logs[0].events if e.kind == "say" and len(e.witnesses) >= 2]
        assert says
        for e in says:
            # Every statement of a speech heard by several ends in one record, owned by its witnesses.
            for clause in range(len(split_statements(e.text))):
                records = k.ledger.fact_records.get((e.seq, clause), set())
                assert len(records) == 1, (e.text, clause, records)
        assert k.ledger.score.merges > 0 and k.ledger.score.precision is not None
    finally:
        backend.close()


def test_labelled_pairs_have_every_kind_with_its_label(tiny_play) -> None:  # type: ignore[no-untyped-def]
    _, replay = _source(tiny_play)
    for level in (0.0, 1.0):
        pairs = build_pairs(replay, Variation(level, seed=4))
        assert {p.kind for p in pairs} == set(KINDS)
        assert all(p.same is KINDS[p.kind] for p in pairs)
        assert all(p.owner_a != p.owner_b for p in pairs if p.kind == "same")
        assert build_pairs(replay, Variation(level, seed=4)) == pairs  # seeded: the same pairs again
    swapped = [p for p in build_pairs(replay, Variation(0.0, seed=4)) if p.kind == "swapped"]
    assert swapped
    for p in swapped:
        # 'I heard Marcellus tell Horatio: "..."' against 'I heard Horatio tell Marcellus: "..."'.
        a, b = p.a.split(":")[0].split(), p.b.split(":")[0].split()
        assert p.what == "say" and a != b and sorted(a) == sorted(b), (p.a, p.b)


def test_an_act_is_swapped_between_doer_and_done_to() -> None:
    act = Event(
        7, 0, "act", "A hall", ("Laertes",), "Laertes wounds Hamlet.", ("Hamlet",), ("Laertes", "Hamlet", "Osric")
    )
    pairs = build_pairs(SourceReplay([[act]], {}), Variation(0.0, seed=0))
    assert [(p.kind, p.what, p.a, p.b) for p in pairs] == [
        ("swapped", "act", "I saw this: Laertes wounds Hamlet.", "I saw this: Hamlet wounds Laertes.")
    ]


def test_pair_rates_count_misses_for_same_and_wrong_merges_for_the_rest(tiny_play) -> None:  # type: ignore[no-untyped-def]
    _, replay = _source(tiny_play)
    pairs = build_pairs(replay, Variation(0.5, seed=0))

    def always(requests):  # type: ignore[no-untyped-def]
        return [r.candidates[0].id for r in requests]

    def never(requests):  # type: ignore[no-untyped-def]
        return [None for _ in requests]

    yes, no = score_pairs(pairs, always), score_pairs(pairs, never)
    assert yes["same"]["miss_rate"] == 0.0 and no["same"]["miss_rate"] == 1.0
    for kind in ("other_speech", "swapped"):
        assert yes[kind]["wrong_merge_rate"] == 1.0 and no[kind]["wrong_merge_rate"] == 0.0
        assert yes[kind]["pairs"] == yes[kind]["merges"] > 0
    got = judge_pairs(replay, AccountJudge, levels=(0.0, 1.0))
    assert [e["variation"] for e in got] == [0.0, 1.0]
    assert got[0]["kinds"]["same"]["miss_rate"] == 0.0  # exact quotations of one speech always meet


def test_judge_curve_has_three_levels_in_range(tiny_play, embed) -> None:  # type: ignore[no-untyped-def]
    world, replay = _source(tiny_play)
    seen: list[float] = []

    def on_level(entry, kernel) -> None:  # type: ignore[no-untyped-def]
        seen.append(entry["variation"])
        entry["records_seen"] = kernel.logs[0].records

    curve = judge_curve(replay, world, embed, AccountJudge, on_level=on_level)
    assert [e["variation"] for e in curve] == seen == [0.0, 0.5, 1.0]
    for e in curve:
        assert 0 <= e["precision"] <= 1 and 0 <= e["recall"] <= 1 and e["merges"] > 0
        assert e["scope"] == "whole source" and e["records_seen"] == e["records"]
    assert curve[0]["recall"] > curve[-1]["recall"]  # more varied wording, fewer accounts meet
    short = judge_curve(replay, world, embed, AccountJudge, steps=3, levels=(0.0, 1.0, 0.5))
    assert [e["scope"] for e in short] == ["first 3 steps"] * 3
    assert short[0]["statements"] < curve[0]["statements"]
