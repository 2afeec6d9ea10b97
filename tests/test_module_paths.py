"""The package's rooms (llm/, planfence/, io/) and the old flat module paths:
each old path re-exports the very objects of its new home, the lazy names
resolve to them, and importing the package loads neither the LLM code nor
the heads transport (its aiohttp is an optional extra)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

MOVED = {
    "agentsensus.fence": "agentsensus.planfence.fence",
    "agentsensus.llm_client": "agentsensus.llm.client",
    "agentsensus.llm_judge": "agentsensus.llm.judge",
    "agentsensus.export": "agentsensus.io.export",
    "agentsensus.importer": "agentsensus.io.importer",
    "agentsensus.compact": "agentsensus.io.compact",
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_path_re_exports_the_same_objects(old: str, new: str) -> None:
    was, home = importlib.import_module(old), importlib.import_module(new)
    assert new in (was.__doc__ or "")
    public = [name for name in home.__all__]
    assert public and set(public) <= set(was.__all__)
    for name in public:
        assert getattr(was, name) is getattr(home, name), f"{old}.{name}"


def test_the_lazy_names_resolve_to_their_homes() -> None:
    from agentsensus import compact, embedders, judges
    from agentsensus.io import compact as compact_module
    from agentsensus.llm import embedder, judge

    assert judges.llm is judge.llm
    assert embedders.openai is embedder.openai and embedders.OpenAIEmbedder is embedder.OpenAIEmbedder
    assert compact is compact_module.compact
    with pytest.raises(AttributeError):
        _ = judges.no_such_judge


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_package_loads_no_llm_code_nor_transport() -> None:
    loaded = _fresh(
        "import sys, agentsensus, agentsensus.judges, agentsensus.embedders, agentsensus.planfence\n"
        "print(sorted(m for m in sys.modules if m.startswith(('agentsensus.llm', 'openai', 'aiohttp'))"
        " or m == 'agentsensus.planfence.transport'))"
    )
    assert loaded == "[]"


@pytest.mark.parametrize("first", ["agentsensus.llm.judge", "agentsensus.judges", "agentsensus.llm_judge"])
def test_no_import_cycle_whichever_module_comes_first(first: str) -> None:
    # A cycle shows as a partially initialised module in a fresh process.
    assert (
        _fresh(f"import {first}\nfrom agentsensus.judges import llm\nprint(llm.__module__)") == "agentsensus.llm.judge"
    )


def test_importing_agentsensus_compact_keeps_the_function_at_the_top() -> None:
    out = _fresh(
        "import agentsensus, agentsensus.compact\nprint(callable(agentsensus.compact), agentsensus.compact.__module__)"
    )
    assert out == "True agentsensus.io.compact"
