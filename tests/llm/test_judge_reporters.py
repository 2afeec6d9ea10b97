"""The judge sees who reports each statement and each candidate, and is told
to read first-person accounts from their reporter."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from agentsensus import Store, embedders, judges
from agentsensus.llm.judge import SYSTEM_PROMPT, LLMJudge
from agentsensus.sim.consensus import ConsensusBackend
from fake_openai import FakeOpenAI

TOLD = "I told Ophelia of my father's ghost"
HEARD = "Hamlet told me of his father's ghost"


def make_judge(fake: FakeOpenAI) -> LLMJudge:
    return judges.llm("fake-model", base_url=fake.url, backoff=0.01)


def requests_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(body["messages"][-1]["content"])["requests"]  # type: ignore[no-any-return]


def test_the_prompt_names_the_reporter_of_the_statement_and_of_each_candidate(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake)
    path = os.fspath(tmp_path / "store")
    with Store(path, embed=embedders.hash, judge=j, min_similarity=-1.0, judge_sees_owners=True) as s:
        s.deposit("Hamlet", [TOLD])
        s.deposit("Ophelia", [HEARD])
    (body,) = fake.log()
    (req,) = requests_of(body)
    assert req["reported_by"] == "Ophelia" and req["statement"] == HEARD
    assert req["candidates"] == [{"id": 1, "reported_by": "Hamlet", "text": TOLD}]
    # The instructions say how to read "I" and "me" against the reporter.
    system = body["messages"][0]["content"]
    assert system == SYSTEM_PROMPT and '"reported_by"' in system and "reporter" in system
    assert '"I told Ophelia" reported by Hamlet is the same fact as "Hamlet told me" reported by Ophelia' in " ".join(
        system.split()
    )


def test_the_simulation_store_shows_the_judge_every_reporter(fake: FakeOpenAI, tmp_path: Any) -> None:
    j = make_judge(fake)
    backend = ConsensusBackend(tmp_path / "consensus", 8, judge=j, min_similarity=-1.0)
    try:
        vec = np.ones((1, 8), dtype=np.float32)
        backend.remember([("Hamlet", [TOLD], vec)], round=1)
        backend.remember([("Horatio", ["I told Ophelia of the ghost"], vec)], round=1)
        backend.remember([("Ophelia", [HEARD], vec)], round=2)
    finally:
        backend.close()
    last = requests_of(fake.log()[-1])[0]
    assert last["reported_by"] == "Ophelia"
    assert sorted(c["reported_by"] for c in last["candidates"]) == ["Hamlet", "Horatio"]
