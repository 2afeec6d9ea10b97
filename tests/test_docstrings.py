"""Every public name of the package has a docstring: each public module, and
in it every class and function of its ``__all__``, with their public methods
and properties (inherited docstrings count)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import agentsensus


def _public_modules() -> list[str]:
    names = ["agentsensus"]
    for m in pkgutil.walk_packages(agentsensus.__path__, "agentsensus."):
        if not any(part.startswith("_") for part in m.name.split(".")):
            names.append(m.name)
    return names


def _undocumented(modname: str) -> list[str]:
    mod = importlib.import_module(modname)
    missing = [] if inspect.getdoc(mod) else [modname]
    for attr in getattr(mod, "__all__", []):
        obj = getattr(mod, attr)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__module__ != modname:
            continue  # re-exports are checked where they are defined
        if not inspect.getdoc(obj):
            missing.append(f"{modname}.{attr}")
        if inspect.isclass(obj):
            for name, member in vars(obj).items():
                if name.startswith("_"):
                    continue
                if isinstance(member, (property, staticmethod, classmethod)) or inspect.isfunction(member):
                    if not inspect.getdoc(getattr(obj, name)):
                        missing.append(f"{modname}.{attr}.{name}")
    return missing


def test_every_public_name_has_a_docstring() -> None:
    modules = _public_modules()
    assert "agentsensus.store" in modules and "agentsensus.cli" in modules
    missing = [m for name in modules for m in _undocumented(name)]
    assert missing == []


def test_no_docstring_or_page_carries_a_sphinx_role() -> None:
    # mkdocstrings renders Markdown: a `:mod:` role would reach the reader raw.
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    role = re.compile(r":(?:py:)?(?:mod|class|func|meth|attr|data|exc|obj|const):`")
    files = [*(root / "python").rglob("*.py"), *(root / "docs").rglob("*.md")]
    assert files
    assert [str(p.relative_to(root)) for p in files if role.search(p.read_text())] == []
