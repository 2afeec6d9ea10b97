"""The package's layout: the public top level and its rooms (llm/,
planfence/, io/, integrations/, ray/, sim/), the private rooms (_deposit/,
_store/, _net/), no old flat paths left behind, no two modules importing
each other in any form, every name the API reference renders importable
from its documented path and public, and importing the package loads
neither the LLM code nor the heads transport (its aiohttp is an extra)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "agentsensus"

# Re-export shims of an unreleased layout, and modules now in private rooms.
GONE = ["export", "importer", "compact", "fence", "heads_transport", "llm_client", "llm_judge"]
GONE += ["deposit_plan", "deposit_passes", "lexical_plan", "lexical_recall", "batch_keys", "forget_plan"]
GONE += ["record_history", "record_meta", "scopes", "embedder_setting", "validation", "normalize", "listen_guard"]


@pytest.mark.parametrize("name", GONE)
def test_an_old_flat_path_is_gone(name: str) -> None:
    assert not (PKG / f"{name}.py").exists()
    if name == "compact":  # the top-level function keeps the name
        import agentsensus

        assert callable(agentsensus.compact) and agentsensus.compact.__module__ == "agentsensus.io.compact"
        return
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"agentsensus.{name}")


def test_the_public_top_level_is_what_users_import() -> None:
    modules = sorted(p.stem for p in PKG.glob("*.py") if not p.stem.startswith("_"))
    assert modules == ["cli", "embedders", "errors", "judges", "policies", "records", "store"]


def _imports(path: Path, module: str, is_package: bool, known: set[str]) -> set[str]:
    """Every agentsensus module ``path`` imports, at the top, inside a
    function or under TYPE_CHECKING: any form counts."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()

    def resolve(name: str) -> str:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(resolve(a.name) for a in node.names if a.name.startswith("agentsensus"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.startswith("agentsensus"):
                out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else resolve(base) for a in node.names)
    out.discard(module)
    return out


def test_no_two_modules_import_each_other() -> None:
    files: dict[str, tuple[Path, bool]] = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_package else parts)] = (p, is_package)
    known = set(files) | {"agentsensus._core"}  # the compiled engine is a module too
    edges = {m: _imports(p, m, is_package, known) for m, (p, is_package) in files.items()}
    pairs = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, set())})
    assert pairs == []
    # the checker sees the forms it must: store -> planfence.fence is a lazy import inside a property
    assert "agentsensus.planfence.fence" in edges["agentsensus.store"]


def test_every_name_the_reference_renders_is_public_and_importable() -> None:
    rendered = re.findall(
        r"^::: (agentsensus\.[\w.]+)$", "".join(p.read_text() for p in (ROOT / "docs").rglob("*.md")), re.M
    )
    assert rendered
    for dotted in rendered:
        assert not any(part.startswith("_") for part in dotted.split(".")), dotted
        module, _, attr = dotted, "", ""
        while True:
            try:
                obj = importlib.import_module(module)
                break
            except ModuleNotFoundError:
                module, _, tail = module.rpartition(".")
                attr = f"{tail}.{attr}" if attr else tail
        for name in filter(None, attr.split(".")):
            obj = getattr(obj, name)


def test_the_lazy_names_resolve_to_their_homes() -> None:
    from agentsensus import embedders, judges
    from agentsensus.llm import embedder, judge

    assert judges.llm is judge.llm
    assert embedders.openai is embedder.openai and embedders.OpenAIEmbedder is embedder.OpenAIEmbedder
    with pytest.raises(AttributeError):
        _ = judges.no_such_judge


def test_judge_request_has_one_home() -> None:
    import agentsensus
    from agentsensus import judges, records

    assert agentsensus.JudgeRequest is judges.JudgeRequest is records.JudgeRequest


def test_a_fence_is_made_from_a_store_or_taken_from_it(tmp_path: Path) -> None:
    from agentsensus import Fence, Store

    with Store(str(tmp_path / "s"), dim=4) as store:
        v = Fence(store).publish("k", "alice", b"one")
        store.fence.derive("plan", "alice", b"p", inputs={"k": v})
        assert store.fence.check("plan").current
        Fence(store).publish("k", "alice", b"two")  # either Fence writes the one lineage
        assert not store.fence.check("plan").current


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


@pytest.mark.parametrize("first", ["agentsensus.llm.judge", "agentsensus.judges", "agentsensus.llm.embedder"])
def test_no_import_cycle_whichever_module_comes_first(first: str) -> None:
    # A cycle shows as a partially initialised module in a fresh process.
    code = f"import {first}\nfrom agentsensus.judges import llm\nfrom agentsensus.embedders import openai\n"
    assert _fresh(code + "print(llm.__module__, openai.__module__)") == "agentsensus.llm.judge agentsensus.llm.embedder"
