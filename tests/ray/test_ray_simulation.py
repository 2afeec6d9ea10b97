"""``agentsensus simulate --ray``: the distributed run (the store in a
StoreActor, the agents' decisions in agent-group actors on two nodes, one
recall_many and one keyed deposit_many a round) gives the local run's results
for the same seed; a sweep runs each seed as a task and aggregates them; the
command line refuses bad flags in one line and runs end to end."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest
from agentsensus.sim.ray_runner import aggregate, parse_seeds, run_ray, sweep, whisker_chart
from agentsensus.sim.runner import run
from agentsensus.sim.simulate_cli import cli_main

pytestmark = pytest.mark.slow  # a Ray cluster

NODES = [{}, {}]


def _tiny_play() -> str:
    spec = importlib.util.spec_from_file_location("sim_conftest", Path(__file__).parent.parent / "sim" / "conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(mod.TINY_PLAY)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("play") / "tiny.md"
    path.write_text(_tiny_play(), encoding="utf-8")
    return os.fspath(path)


def untimed(d: Any) -> Any:
    """Metrics without what measures time (and the machine's load, which moves between two runs)."""
    if isinstance(d, dict):
        skip = ("seconds", "latency_bins", "machine")
        return {k: untimed(v) for k, v in d.items() if k not in skip and "_ms" not in k}
    if isinstance(d, list):
        return [untimed(v) for v in d]
    return d


def local_run(world: str, seed: int, rounds: int) -> dict[str, Any]:
    return run(
        world=world,
        rounds=rounds,
        backends=["consensus"],
        out=None,
        ablation=False,
        cache_rows=False,
        keep_names=False,
        horizon=(),
        seed=seed,
        progress=False,
    )


def test_the_distributed_run_equals_the_local_run_for_a_seed(cluster, tiny) -> None:
    local = local_run(tiny, seed=3, rounds=10)
    quick = {"cache_rows": False, "keep_names": False, "horizon": ()}
    dist = run_ray(tiny, 10, seed=3, backends=["consensus"], progress=False, **quick)
    ray = dist.metrics["ray"]
    assert dist.nodes == 2 and ray["groups"] == 2 and ray["group_nodes"] == 2
    assert len(ray["decide_seconds"]) == dist.metrics["rounds"]
    for key in ("rounds", "agents", "events", "stopped", "source_events"):
        assert dist.metrics[key] == local[key], key
    want, got = untimed(local["backends"]["consensus"]), untimed(dist.metrics["backends"]["consensus"])
    assert got == want
    assert want["sim"] > 0 and want["actions"]  # the rounds did something to compare


def test_a_sweep_runs_each_seed_as_a_task_and_aggregates(cluster, tiny) -> None:
    result = sweep([tiny], [1, 2], rounds=4, progress=False)
    assert [r["seed"] for r in result["runs"]] == [1, 2]
    assert untimed(result["runs"][0]) == untimed(local_run(tiny, seed=1, rounds=4))
    row = result["summary"][result["runs"][0]["world"]]
    sims = [r["backends"]["consensus"]["sim"] for r in result["runs"]]
    assert row["runs"] == 2 and row["sim entries"]["mean"] == pytest.approx(sum(sims) / 2)
    assert row["sim entries"]["min"] == min(sims) and row["sim entries"]["max"] == max(sims)
    svg = whisker_chart(result, "sim entries")
    assert svg.startswith("<svg") and svg.count("<circle") == 2  # the min and max ticks of the one world


def test_aggregate_gives_mean_and_sample_sd() -> None:
    runs = [{"world": "w", "seed": s, "backends": {"consensus": {"sim": x, "judge": {}}}} for s, x in ((1, 2), (2, 4))]
    row = aggregate(runs)["w"]
    assert row["sim entries"] == {"mean": 3.0, "sd": pytest.approx(2**0.5), "min": 2.0, "max": 4.0}
    assert "judge precision" not in row


def test_seeds_parse_ranges_and_lists() -> None:
    assert parse_seeds("1-8") == list(range(1, 9)) and parse_seeds("3") == [3]
    assert parse_seeds("1,4,9-11,4") == [1, 4, 9, 10, 11]
    for bad in ("", "a", "8-1", "1-", "-3", "1-x"):
        with pytest.raises(ValueError, match="--seeds"):
            parse_seeds(bad)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--seeds", "1-3"], "--seeds and --worlds run on Ray: add --ray ADDRESS"),
        (["--ray", "local", "--seeds", "3-1"], "--seeds: '3-1' is not a seed"),
        (["--ray", "local", "--ray-nodes", "0"], "--ray-nodes must be between 1 and 16"),
        (["--ray", "local", "--calls-per-node", "0"], "--calls-per-node must be at least 1"),
        (["--ray", "local", "--model-latency", "-1"], "--model-latency must be between 0 and 600"),
        (["--ray", "local", "--worlds", "nowhere-play-xyz"], "--worlds"),
    ],
)
def test_bad_ray_flags_are_one_line_refusals(capsys, tiny, argv, message) -> None:
    assert cli_main(["--world", tiny, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentsensus simulate: ") and message in err and err.count("\n") == 1
