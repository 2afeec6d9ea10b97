"""The mem0 adapter with ``disclosure="own_words"``: every read (search,
get_all, get, history) shows a user only its own words, and another user's
probe that merges into its memory (rewriting the record's text under
keep_names) changes nothing it reads."""

from __future__ import annotations

import pytest
from agentsensus import judges
from agentsensus.integrations.mem0 import Memory

VICTIM = "Alice hid the spare key under the old flowerpot"
PROBE = "Alice hid the spare key somewhere"  # shorter, the same names: keep_names keeps it
MERGING = {"judge": judges.threshold(0.5), "min_similarity": 0.5}  # the two score 0.65 with the hash embedder


def everything(m: Memory, user: str) -> list[dict]:
    """Every row the adapter's reads give ``user``."""
    rows = m.search("where is the spare key", filters={"user_id": user})["results"]
    rows += m.get_all(filters={"user_id": user})["results"]
    for r in list(rows):
        rows.append(m.get(r["id"]))
        rows += m.history(r["id"])
    return rows


def texts(rows: list[dict]) -> set[str]:
    return {t for r in rows for t in (r.get("memory"), r.get("old_memory"), r.get("new_memory")) if t}


def probed(m: Memory) -> tuple[list[dict], list[dict], list[dict]]:
    m.add(VICTIM, user_id="alice")
    before = everything(m, "alice")
    assert m.add(PROBE, user_id="bob")["results"][0]["event"] == "ADD"
    assert m.store.stats().records == 1  # it merged
    return before, everything(m, "bob"), everything(m, "alice")


def test_own_words_reads_show_a_user_only_its_words(tmp_path) -> None:
    with Memory(str(tmp_path / "m"), disclosure="own_words", **MERGING) as m:
        before, bobs, after = probed(m)
        assert next(m.store.records()).text == PROBE  # the record reads as bob's words now
    assert texts(bobs) == {PROBE}
    assert texts(after) == {VICTIM}
    assert after == before


def test_shared_mem0_shows_the_prober_the_victims_words(tmp_path) -> None:
    """What own_words guards against: bob's history and alice's reads cross."""
    with Memory(str(tmp_path / "m"), **MERGING) as m:
        _, bobs, after = probed(m)
    assert VICTIM in texts(bobs)
    assert PROBE in texts(after)


def test_the_config_takes_disclosure_and_refuses_a_bad_one(tmp_path) -> None:
    with Memory.from_config({"path": str(tmp_path / "a"), "disclosure": "own_words"}) as m:
        assert m.store.disclosure == "own_words"
    with pytest.raises(ValueError, match="disclosure must be 'shared' or 'own_words'"):
        Memory.from_config({"path": str(tmp_path / "b"), "disclosure": "mine"})
