"""``agentsensus simulate --policy llm`` against an endpoint that refuses big
prompts, fails now and then, garbles and refuses answers: the run ends
normally, and ``metrics.json`` and the report say what the model cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from agentsensus.sim.simulate_cli import cli_main

FAKE = Path(__file__).resolve().parents[1] / "llm" / "fake_openai.py"
# Prompts over 6,000 characters get a 400 "maximum context length"; of the others, a seeded
# 3% get a 503, 10% malformed JSON and 10% a refusal.
FAULTS = ["--max-prompt-chars", "6000", "--fail-rate", "0.03", "--malformed-rate", "0.1", "--refusal-rate", "0.1"]


@pytest.fixture()
def faulty_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(FAKE), *FAULTS, "--seed", "7"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_a_run_against_a_refusing_failing_endpoint_completes_and_counts(
    faulty_url: str, tiny_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "report"
    argv = [
        "--world", str(tiny_file), "--rounds", "3", "--quick", "--backends", "consensus",
        "--policy", "llm", "--llm-base-url", faulty_url, "--model", "fake", "--out", str(out), "--quiet",
    ]  # fmt: skip
    assert cli_main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["rounds"] == 3
    llm = metrics["llm"]
    assert llm["calls"] > 0 and llm["errors"] > 0 and llm["malformed"] > 0
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0
    for key in ("calls", "errors", "malformed", "fallbacks", "prompt_tokens", "completion_tokens"):
        assert llm[key] == llm["policy"][key] + llm["judge"][key], key
    # The policy asked once per awake agent and round; the judge's big batches were refused, then split.
    assert llm["policy"]["calls"] >= 3 and llm["judge"]["errors"] > 0
    assert "<h2>The model</h2>" in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_llm_usage_sums_policy_and_judge_and_is_absent_without_a_model(tiny_file: Path, tmp_path: Path) -> None:
    from agentsensus.sim.llm_policy import LLMPolicies
    from agentsensus.sim.llm_usage import llm_usage

    class Judge:
        def counters(self) -> dict[str, int]:
            return {"calls": 5, "errors": 2, "malformed": 1, "fallbacks": 3, "prompt_tokens": 40, "tokens": 99}

    policies = LLMPolicies(lambda prompt: "I can't help with that.")
    policies().stats.add(calls=2, malformed=2, fallbacks=2)  # the factory's policies share its counters
    usage = llm_usage(policies, Judge())
    assert usage is not None
    assert usage["policy"] == {
        "calls": 2, "errors": 0, "malformed": 2, "fallbacks": 2, "prompt_tokens": 0, "completion_tokens": 0,
    }  # fmt: skip
    assert (usage["calls"], usage["errors"], usage["malformed"], usage["fallbacks"]) == (7, 2, 3, 5)
    assert usage["prompt_tokens"] == 40 and usage["completion_tokens"] == 0
    assert llm_usage(None, None) is None and llm_usage(lambda: None, object()) is None
    # A run without a model writes no llm object and no model table.
    out = tmp_path / "report"
    argv = ["--world", str(tiny_file), "--rounds", "2", "--quick", "--backends", "consensus", "--out", str(out)]
    assert cli_main(argv + ["--quiet"]) == 0
    assert "llm" not in json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert "<h2>The model</h2>" not in (out / "report.html").read_text(encoding="utf-8")


def test_the_judge_budget_reaches_the_judge_and_is_checked(tiny_file: Path) -> None:
    from agentsensus.sim.simulate_cli import _llm, build_parser

    args = build_parser().parse_args(
        ["--llm-base-url", "http://127.0.0.1:9/v1", "--model", "m", "--judge-budget", "900"]
    )
    assert _llm(args)["judge"].judge_budget == 900
    assert build_parser().parse_args([]).judge_budget == 24000
    assert cli_main(["--world", str(tiny_file), "--judge-budget", "0"]) == 2
