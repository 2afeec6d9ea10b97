"""The docs: the site builds with warnings as errors (`mkdocs build --strict`),
and the project owns its documents. No file of the project points at a
document it does not hold (a sibling `shared` folder, or reference notes
named API, DESIGN or NOTES), every relative Markdown link and every quoted
repository path names a file that exists, and the package's docstrings cite
only the package itself and the repository's docs/."""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import pydoc
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import agentsensus
import pytest

pytestmark = pytest.mark.slow  # the docs site build and a scan of every file

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(agentsensus.__path__[0]).resolve()

# What "the project" is, for these checks: the files a user or a contributor
# reads. tests/ is left out so that this file may spell what it looks for.
SCOPE_FILES = ("README.md", "CONTRIBUTING.md", "mkdocs.yml", "pyproject.toml", "CMakeLists.txt")
SCOPE_DIRS = ("docs", "python", "bench", "cpp", "bindings", "examples", "fuzz", "scripts", "cmake", ".ci")
# Walked when there is no git checkout (an unpacked sdist).
_UNTRACKED = {"build", "dist", "site", "__pycache__", ".venv", ".data", "results", ".hypothesis", ".benchmarks"}

# Documents the project does not hold. Spelled in pieces so that no literal
# here reads as a citation.
_SHARED = "shared"
_NAMES = ("API", "DESIGN", "NOTES")
FOREIGN = [
    (re.compile(r"\.\./" + _SHARED + r"\b"), "a path into ../" + _SHARED),
    (re.compile(r"/work/" + _SHARED + r"\b"), "a path into /work/" + _SHARED),
    (re.compile(r"\b(?:" + "|".join(_NAMES) + r")\.md\b"), "a document the project does not hold"),
    (re.compile(r"\b(?:" + "|".join(_NAMES[1:]) + r")\b(?!\.md)"), "a document the project does not hold"),
]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_LINK = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//|#)")
# A file named in prose: a path of word characters ending in a known extension.
_FILE = re.compile(
    r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[A-Za-z_][\w.-]*\.(?:md|py|pyi|hpp|cpp|h|c|toml|ya?ml|txt|sh|cfg|patch))\b"
)


@functools.lru_cache(maxsize=None)
def _tracked(root: Path = ROOT) -> tuple[str, ...]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, timeout=60)
    except OSError:
        out = None
    if out is not None and out.returncode == 0 and out.stdout:
        return tuple(f for f in out.stdout.split("\0") if f)
    walked = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and not _UNTRACKED.intersection(rel.parts):
            walked.append(rel.as_posix())
    return tuple(walked)


def _in_scope(rel: str) -> bool:
    return rel in SCOPE_FILES or rel.split("/", 1)[0] in SCOPE_DIRS


def project_texts() -> Iterator[tuple[str, str]]:
    """(path, text) of every tracked text file of the project."""
    for rel in sorted(_tracked()):
        p = ROOT / rel
        if not _in_scope(rel) or not p.is_file():
            continue  # a tracked file deleted in the work tree is not read by anyone
        data = p.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield rel, data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary (an image)


def foreign_references(text: str) -> list[tuple[int, str, str]]:
    """(line, what matched, why) for each citation of a document outside the project."""
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, why in FOREIGN:
            hits += [(n, m.group(0), why) for m in pattern.finditer(line)]
    return hits


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _blank(m: re.Match[str]) -> str:
    # Keep line numbers: a fenced block becomes as many empty lines.
    return "\n" * m.group(0).count("\n")


def _ignored(rel: str, root: Path) -> bool:
    """True when git ignores ``rel``: a generated path (bench/.data/) that a
    page may name without it being in the repository."""
    try:
        out = subprocess.run(["git", "check-ignore", "-q", rel], cwd=root, capture_output=True, timeout=60)
    except OSError:
        return False
    return out.returncode == 0


def broken_links(rel: str, text: str, root: Path = ROOT) -> list[tuple[int, str, str]]:
    """(line, target, why) for each relative Markdown link of the page at
    ``rel`` that leaves the repository or names a file that does not exist,
    and each quoted repository path (`docs/x.md`, `bench/y.py`) that does
    not exist."""
    here = (root / rel).parent
    prose = _FENCE.sub(_blank, text)
    hits = []
    targets = [(m.start(), m.group(1)) for m in _LINK.finditer(_CODE.sub(lambda m: " " * len(m.group(0)), prose))]
    targets += [(m.start(), m.group(1)) for m in _REF_LINK.finditer(prose)]
    for pos, target in targets:
        if _EXTERNAL.match(target):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (here / path).resolve()
        if resolved != root and root not in resolved.parents:
            hits.append((_line_of(prose, pos), target, "leaves the repository"))
        elif not resolved.exists():
            hits.append((_line_of(prose, pos), target, "no such file in the repository"))
    top = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    for m in _CODE.finditer(prose):
        token = m.group(1).strip().rstrip(".,:;")
        if not re.fullmatch(r"[\w.-]+(?:/[\w.-]+)+/?", token) or token.split("/", 1)[0] not in top:
            continue
        path = token.split("#", 1)[0]
        if not (root / path).exists() and not _ignored(path, root):
            hits.append((_line_of(prose, m.start()), token, "no such path in the repository"))
    return hits


def _report(hits: list[str]) -> str:
    return "\n".join(hits[:60]) + (f"\n... and {len(hits) - 60} more" if len(hits) > 60 else "")


def test_docs_build_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    store_page = (site / "reference" / "store" / "index.html").read_text(encoding="utf-8")
    assert "deposit_many" in store_page and "recall" in store_page  # rendered from the docstrings
    for img in ("consensus", "owner-sets", "affiliation", "planfence"):
        assert (site / "img" / f"{img}.svg").is_file()
    contract = (site / "reference" / "contract" / "index.html").read_text(encoding="utf-8")
    assert "StalePlanError" in contract and "ContentionError" in contract
    assert (site / "design" / "index.html").is_file()


def test_no_file_cites_a_document_outside_the_project() -> None:
    hits = [
        f"{rel}:{n}: {found!r}: {why}" for rel, text in project_texts() for n, found, why in foreign_references(text)
    ]
    assert not hits, "files that cite what the project does not hold:\n" + _report(hits)


def test_every_relative_link_and_quoted_path_exists() -> None:
    hits = [
        f"{rel}:{n}: {target!r}: {why}"
        for rel, text in project_texts()
        if rel.endswith(".md")
        for n, target, why in broken_links(rel, text)
    ]
    assert not hits, "links and paths to files the repository does not have:\n" + _report(hits)


def _docstrings() -> Iterator[tuple[str, str]]:
    """(where, docstring) of every module of the package, and of the classes,
    functions, methods and properties each defines."""
    mods = [agentsensus] + [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(agentsensus.__path__, "agentsensus.")
        if not m.name.endswith("__main__")
    ]
    for mod in mods:
        yield mod.__name__, inspect.getdoc(mod) or ""
        for name, obj in vars(mod).items():
            if (
                not (inspect.isclass(obj) or inspect.isfunction(obj))
                or getattr(obj, "__module__", None) != mod.__name__
            ):
                continue
            yield f"{mod.__name__}.{name}", inspect.getdoc(obj) or ""
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) or isinstance(member, property):
                        yield f"{mod.__name__}.{name}.{attr}", inspect.getdoc(member) or ""


def cited_outside(doc: str, package: Path = PACKAGE, root: Path = ROOT) -> list[str]:
    """The files ``doc`` names that a reader of the package cannot open: a
    document of the repository outside docs/, or a file of the repository
    outside the package. Names of files a command writes (report.html) are
    not files of the repository and pass."""
    bad = []
    for name in _FILE.findall(doc):
        if name.startswith("../"):
            bad.append(name)
            continue
        in_package = (package / name).exists() or (
            name.startswith(package.name + "/") and (package.parent / name).exists()
        )
        if in_package or (name.startswith("docs/") and (root / name).exists()):
            continue
        elsewhere = (
            (root / name).exists()
            or "/" not in name
            and any(f.rsplit("/", 1)[-1] == name and not f.startswith(("docs/", "python/")) for f in _tracked(root))
        )
        if elsewhere or name.endswith(".md"):
            bad.append(name)
    return bad


def test_package_docstrings_cite_only_the_package_and_its_docs() -> None:
    texts = list(_docstrings())
    texts.append(("help(agentsensus.Store)", pydoc.render_doc(agentsensus.Store, renderer=pydoc.plaintext)))
    texts.append(("help(agentsensus)", pydoc.render_doc(agentsensus, renderer=pydoc.plaintext)))
    hits = []
    for where, doc in texts:
        hits += [f"{where}: {found!r}: {why}" for _, found, why in foreign_references(doc)]
        hits += [f"{where}: {name!r}: not in the package or docs/" for name in cited_outside(doc)]
    assert not hits, "docstrings that send the reader outside the package:\n" + _report(sorted(set(hits)))


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    # The detectors themselves, on crafted text: a check that cannot fail
    # would pass the tree whatever it holds.
    shared = "../" + _SHARED + "/" + _NAMES[0] + ".md"
    assert foreign_references(f"See `{shared}` for the contract.")
    assert foreign_references("the bars of " + _NAMES[1] + ", measured")
    assert foreign_references("(" + _NAMES[2] + ": 35x at 0.1%)")
    assert not foreign_references("See docs/design.md and docs/reference/contract.md; notes and design.")

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "here.md").write_text("x")
    page = (
        "[ok](here.md) [anchor](here.md#a) [web](https://example.org) [self](#top)\n"
        "[gone](missing.md)\n"
        "[out](../../elsewhere.md)\n"
        "```\n[in code](not-a-link.md)\n```\n"
        "`docs/here.md` `docs/absent.md`\n"
    )
    found = {(n, target) for n, target, _ in broken_links("docs/page.md", page, root=tmp_path)}
    assert found == {(2, "missing.md"), (3, "../../elsewhere.md"), (7, "docs/absent.md")}

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "mod.py").write_text("")
    (tmp_path / "cpp").mkdir()
    (tmp_path / "cpp" / "codec.hpp").write_text("")
    doc = "See sub/mod.py, docs/here.md and cpp/codec.hpp; writes report.html; the contract is in contract.md."
    assert cited_outside(doc, package=pkg, root=tmp_path) == ["cpp/codec.hpp", "contract.md"]


def test_readme_links_only_into_the_repository() -> None:
    # The README is what a reader meets first, on a forge or in the sdist:
    # everything it links to ships with it.
    readme = _FENCE.sub(_blank, (ROOT / "README.md").read_text(encoding="utf-8"))
    targets = [m.group(1) for m in _LINK.finditer(_CODE.sub(lambda m: " " * len(m.group(0)), readme))]
    targets += [m.group(1) for m in _REF_LINK.finditer(readme)]
    assert targets, "the README links the contract and the design"
    outside = [t for t in targets if _EXTERNAL.match(t) and not t.startswith("#")]
    assert not outside, f"README links outside the repository: {outside}"
    assert {"docs/reference/contract.md", "docs/design.md"} <= {t.split("#", 1)[0] for t in targets}


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = "python -m pytest tests -q -p no:cacheprovider"
    assert f'pip install ".[test]" && {command}' in readme
    assert 'pip install ".[sim]" && agentsensus simulate' in readme
    assert any(line.strip() == command for line in ci.splitlines()), ".ci/run must run the README's test command"
