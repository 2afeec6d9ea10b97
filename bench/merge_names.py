"""Which merge policy keeps the names: the simulation's merges replayed under
each policy.

Runs the simulation's consensus backend (``agentsensus.sim``, Hamlet by
default, ``keep_shorter`` as in the paper) and keeps its merge log, then
replays that log's merges, record by record and in order, under each policy,
so every policy meets the same pairs (the judge's verdicts held fixed). For
each: the share of merges whose kept text lost a cast member that the
discarded text names (the simulation's own measure, ``sim.metrics.name_loss``),
and the characters discarded and kept per merge. ``cast`` is a policy that
knows the play's cast and keeps whichever text loses fewer of its members
(the shorter on a tie): the best choice merge by merge, a yardstick for any
policy that keeps one of the two texts. ``fewest_lost`` is ``keep_names`` that, when
neither text's capitalised names cover the other's, keeps the one losing
fewer (``keep_names`` keeps the record's text).

    python bench/merge_names.py [--world hamlet] [--rounds 40]

A merge log holds (kept, discarded) per merge; which of the two was the
record's text before its first merge is not logged, so the replay takes the
kept one. Runs against the installed package (the ``sim`` modules).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any, Callable

from agentsensus import policies
from agentsensus.sim import runner
from agentsensus.sim.metrics import People


def merge_log(world: str, rounds: int) -> tuple[list[Any], list[str]]:
    """The main consensus run's merge log (as the report's name loss gets it) and the cast."""
    logs: list[list[Any]] = []
    measure = runner.name_loss

    def keep(merges: Any, people: Any, ledger: Any = None) -> Any:
        logs.append(list(merges))
        return measure(merges, people, ledger)

    runner.name_loss = keep  # the run hands its merge log to name_loss; keep a copy
    try:
        runner.run(
            world,
            rounds,
            backends=["consensus"],
            out=None,
            cache_rows=False,
            horizon=[],
            keep_names=False,
            ablation=False,
            progress=False,
        )
    finally:
        runner.name_loss = measure
    return logs[0], list(runner.load_play(world).cast)


def statements(log: list[Any]) -> list[list[str]]:
    """Per record, its texts in the order they met: the first, then each incoming one."""
    by: dict[int, list[Any]] = defaultdict(list)
    for m in log:
        by[m.survivor].append(m)
    out = []
    for ms in by.values():
        texts, cur = [ms[0].kept, ms[0].discarded], ms[0].kept
        for m in ms[1:]:
            texts.append(m.discarded if m.kept == cur else m.kept)
            cur = m.kept
        out.append(texts)
    return out


def replay(seqs: list[list[str]], policy: Callable[[str, str], str], people: People) -> tuple[float, float, float]:
    n = lost = discarded = kept = 0
    for texts in seqs:
        cur = texts[0]
        for incoming in texts[1:]:
            out = policy(cur, incoming)
            gone = incoming if out == cur else cur
            n += 1
            lost += bool(people(gone) - people(out))
            discarded += len(gone)
            kept += len(out)
            cur = out
    return lost / n, discarded / n, kept / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--world", default="hamlet")
    p.add_argument("--rounds", type=int, default=40)
    a = p.parse_args()
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    log, cast = merge_log(a.world, a.rounds)
    people = People(cast)

    def cast_aware(existing: str, incoming: str) -> str:
        ne, ni = people(existing), people(incoming)
        lose_incoming, lose_existing = len(ni - ne), len(ne - ni)
        if lose_incoming != lose_existing:
            return existing if lose_incoming < lose_existing else incoming
        return policies.keep_shorter(existing, incoming)

    def fewest_lost(existing: str, incoming: str) -> str:
        # keep_names, but when neither text's names cover the other's, the one losing fewer
        short, long_ = (incoming, existing) if len(incoming) < len(existing) else (existing, incoming)
        ns, nl = policies.capitalised_names(short), policies.capitalised_names(long_)
        if nl <= ns or ns <= nl or len(nl - ns) == len(ns - nl):
            return policies.keep_names(existing, incoming)
        return short if len(nl - ns) < len(ns - nl) else long_

    seqs = statements(log)
    if not log:
        raise SystemExit(f"{a.world}, {a.rounds} rounds: the run merged nothing, so there is nothing to replay")
    print(f"{a.world}, {a.rounds} rounds: {len(log):,} merges into {len(seqs):,} records, replayed")
    print("| policy | merges that lost a named person | discarded chars per merge | kept chars per merge |")
    print("|---|---|---|---|")
    for name, pol in [
        ("keep_shorter", policies.keep_shorter),
        ("keep_names", policies.keep_names),
        ("fewest_lost", fewest_lost),
        ("cast", cast_aware),
    ]:
        lost, disc, kept = replay(seqs, pol, people)
        print(f"| {name} | {lost:.1%} | {disc:.1f} | {kept:.1f} |")


if __name__ == "__main__":
    main()
