"""Judging a whole batch of deposits in a few judge calls (passes).

A batch (``deposit_many``) means: items one after another, each seeing what
the items before it staged. Asked item by item, a round of 50 agents costs
50 judge latencies. Here the judge is asked about many items at once, and the
result is still the item-by-item one, by construction:

- Every pass plans the batch from its first item, in order, exactly as the
  item-by-item path does (the same ``BatchPlanner`` steps). A request whose
  verdict is known, because the judge answered that exact request (statement,
  owner, every candidate's id, text, owners, round and score), takes that
  verdict. A request not answered yet is put in this pass's call and planning
  goes on with a guess for it, so that the later items' requests can be
  asked in the same call.
- After the call, the next pass plans again. The batch commits from the
  first pass in which every request's verdict was the judge's own: then each
  request the plan rests on is the one the item-by-item path builds, answered
  by the judge.

Invariant: the items planned before the first item with an unanswered
request used only the judge's verdicts, so that item's requests are the
item-by-item path's own, and the pass asks all of them. Each pass therefore
answers at least one more item of the final plan: a batch never takes more
judge calls than item by item (one per item with requests), and the pass
that commits asks nothing.

So the first pass asks every item's requests against the snapshot and what
the earlier items are guessed to stage; later passes ask only the requests
that came out otherwise, because an earlier guess was wrong (candidates
created by earlier items of the batch, or texts they changed). A judge whose
verdict on a request depends only on that request gets the same answers as
item by item, so the store ends the same. A judge that reads the other
requests of its call, or counts its calls, is asked with
``judge_per_item=True`` (one call per item, in order).

Cost: a request asked on a guess that turns out wrong is a request the
item-by-item path never sends. Every request asked is counted against the
requests known to be the item-by-item path's own (those of the items planned
on the judge's verdicts only, and of the first item with an unanswered
request); a pass asks a later item's requests on guesses only while the
requests asked so far, these included, stay within ``SLACK`` (1.1) times
those. So a batch of any size sends at most 1.1 times the requests of the
same items deposited one by one (and as many candidates at most in the same
ratio to the requests it rests on); when guesses keep proving right, each
pass may ask ahead a little further than the last.

A guess is the judge's verdict on an earlier version of the same statement's
request when that candidate is still offered; else the best candidate not
offered to that statement before (all of them, for a statement not judged
yet) when its score reaches the cut that `GuessModel` learned from
the judge's earlier answers; else no match.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import operator
from typing import Any, Generator, Optional, Sequence

import numpy as np

from ..records import JudgeRequest, Memory
from .plan import BatchPlanner, Item, Verdict

__all__ = ["JudgeCall", "GuessModel", "Passes", "call_judge", "acall_judge"]

# A request as the judge saw it: equal keys, equal requests.
_Key = tuple[str, str, tuple[tuple[Any, ...], ...]]
_FIELDS = [f.name for f in dataclasses.fields(Memory)]
# The first passes plan the whole batch ahead; later ones only this many items past
# the first unanswered one: when the guesses keep failing, a fast judge is better
# served by short passes than by replanning hundreds of items each time.
FULL_PASSES = 3
WINDOW = 32
# A batch asks at most this many times the requests its plan rests on, which are
# the requests the items deposited one by one would send (see "Cost" above).
SLACK = 1.1
_Stable = tuple[int, ...]


class JudgeCall(list):  # type: ignore[type-arg]  # list[JudgeRequest], as every judge takes it
    """The requests of one judge call, in item order, and ``spans``: the
    slice ``[start, end)`` of the requests each item asked first."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[int, int]] = []


_fields_of = operator.attrgetter(*_FIELDS)


def _key(r: JudgeRequest) -> _Key:
    # every field of every candidate; a NaN score (no such number) equals itself
    # here. Only the two float fields can be NaN, so only a candidate with a NaN
    # there is rebuilt (a per-field generator for every candidate was 10% of a
    # judged deposit's CPU with 16 candidates).
    cands = []
    for c in r.candidates:
        t = _fields_of(c)
        s, ls = c.score, c.lexical_score
        if (s is not None and s != s) or (ls is not None and ls != ls):
            t = tuple("nan" if v != v else v for v in t)
        cands.append(t)
    return (r.statement, r.owner, tuple(cands))


class GuessModel:
    """The score from which the judge tends to name a request's best
    candidate, learned from its last ``keep`` answers (a store keeps one
    across its batches). Guesses only order the work; no commit rests on one."""

    def __init__(self, keep: int = 1024) -> None:
        # The last keep answers in a ring: (best score, the judge named it).
        # Arrays, not a deque of tuples: refit runs after every judge call,
        # and sorting 1,024 Python tuples there was 30% of a deposit's CPU.
        self._scores = np.empty(keep, dtype=np.float64)
        self._named = np.empty(keep, dtype=np.int64)
        self._n = 0
        self._next = 0
        self.cut = -math.inf  # before any answer: guess the best candidate
        # Answers learned since the last refit: names() refits first. Lazily,
        # because most deposits never guess (a single deposit's call is
        # answered before anything rests on a guess) and a refit sorts up
        # to keep scores.
        self._stale = False

    def learn(self, req: JudgeRequest, verdict: Verdict) -> None:
        """Notes one answer: the request's best score and whether the judge named that candidate."""
        i = self._next
        self._scores[i] = _score(req.candidates[0])
        self._named[i] = verdict == req.candidates[0].id
        self._next = (i + 1) % len(self._scores)
        self._n = min(self._n + 1, len(self._scores))
        self._stale = True

    def refit(self) -> None:
        """The cut with the fewest wrong guesses over the samples (the lowest
        such cut: a wrong merge guess costs no more than a wrong new one).
        A cut at position i of the sorted scores guesses "named" from there
        on: it is wrong for the named below it and the unnamed from it, so
        2 * named_below + (n - i) - named_all; cuts fall only between
        distinct scores (or at the ends)."""
        n = self._n
        order = np.argsort(self._scores[:n], kind="stable")
        pts = self._scores[:n][order]
        below = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self._named[:n][order], out=below[1:])
        wrong = 2 * below + (n - np.arange(n + 1)) - below[n]
        if n > 1:
            wrong[1:n][pts[:-1] >= pts[1:]] = n + 1  # between equal scores: no cut
        i = int(np.argmin(wrong))  # the first, so the lowest cut
        self.cut = float(pts[i]) if i < n else math.inf
        self._stale = False

    def names(self, c: Memory) -> bool:
        """Whether the judge likely names candidate ``c`` (its score reaches the cut)."""
        if self._stale:
            self.refit()
        return _score(c) >= self.cut


def _score(c: Memory) -> float:
    s = c.score
    return -math.inf if s is None or s != s else float(s)


def _guess(
    model: GuessModel,
    req: JudgeRequest,
    stable: list[_Stable],
    seen: Optional[tuple[frozenset[_Stable], Optional[_Stable]]],
) -> Optional[int]:
    """What the judge will likely answer to ``req`` (see the module docstring)."""
    offered, verdict = seen if seen is not None else (frozenset(), None)
    if verdict is not None:
        for c, s in zip(req.candidates, stable):
            if s == verdict:
                return c.id
    fresh = [c for c, s in zip(req.candidates, stable) if s not in offered]  # best first
    return fresh[0].id if fresh and model.names(fresh[0]) else None


class Passes:
    """Plans one attempt at a batch in passes, keeping the judge's verdicts
    of that attempt."""

    def __init__(self, model: Optional[GuessModel] = None) -> None:
        self.model = model if model is not None else GuessModel()
        self.verdicts: dict[_Key, Verdict] = {}
        # per (item, statement): the candidates last asked about and the verdict, by stable ids
        self.seen: dict[tuple[int, int], tuple[frozenset[_Stable], Optional[_Stable]]] = {}
        # where the next pass starts: the staged state after the items that used only
        # the judge's verdicts, and the first item after them (that state is the
        # item-by-item one, so replanning those items would give it again)
        self.resume: Optional[tuple[tuple[Any, ...], int]] = None
        # The resume item's begin (its pending decisions and committed rows)
        # and, per request, its verdict: known before the pass, or the index
        # of the call's request it asked. begin is a pure function of the
        # staged state and the snapshot, so the next pass, restored to that
        # same state, finishes this item without planning it again (for a
        # single deposit: the judge's call, then the commit, with one begin).
        self._ready: Optional[tuple[Any, Any, list[tuple[bool, Any]]]] = None
        self._answers: list[Verdict] = []
        # Cost: every request asked (its key), and those the item-by-item plan rests on
        # and their candidates (the tokens of a prompt)
        self._asked: set[_Key] = set()
        self._own: set[_Key] = set()
        self._asked_cands = self._own_cands = 0

    def plan(self, planner: BatchPlanner, items: Sequence[Item]) -> Generator[JudgeCall, Sequence[Verdict], None]:
        """Plans ``items`` on ``planner`` (prepared), yielding each pass's
        judge call and receiving its verdicts; on return the planner holds
        the item-by-item plan."""
        for k in range(len(items) + 1):  # one pass per item at most, plus the last (see the invariant)
            call, asked = self._one_pass(planner, items, len(items) if k < FULL_PASSES else WINDOW)
            if not call:
                return
            got = yield call
            if not isinstance(got, (list, tuple)):
                raise TypeError(f"judge must return a list, got {type(got).__name__}")
            checked = BatchPlanner._checked_verdicts(list(call), got)
            self._answers = checked
            for req, (where, stable), v in zip(call, asked, checked):
                self.verdicts[_key(req)] = v
                # A supersession makes a new record: later passes guess "new" for it.
                merged = v if isinstance(v, int) else None
                pick = None if merged is None else stable[[c.id for c in req.candidates].index(merged)]
                self.seen[where] = (frozenset(stable), pick)
                self.model.learn(req, v)
        raise AssertionError("planning in passes did not converge")  # the invariant above rules it out

    def _one_pass(
        self, planner: BatchPlanner, items: Sequence[Item], ahead: int
    ) -> tuple[JudgeCall, list[tuple[tuple[int, int], list[_Stable]]]]:
        first = 0
        if self.resume is None:
            planner.rewind()
        else:
            planner.restore(self.resume[0])
            first = self.resume[1]
        ready, self._ready = self._ready, None
        call = JudgeCall()
        asked: list[tuple[tuple[int, int], list[_Stable]]] = []
        in_call: dict[_Key, int] = {}  # a request's index in the call
        sure = True  # every verdict used so far is the judge's
        unsure_from = len(items)
        verdicts: list[Verdict]
        slots: list[tuple[bool, Any]]  # per request: (asked in this call, its index there | the known verdict)
        for n in range(first, len(items)):
            if n - unsure_from >= ahead:
                break  # what lies further is planned in a later pass
            item = items[n]
            if ready is not None and n == first:
                # Planned by the last pass from this same state, and every request of it answered since.
                pend, committed, answered = ready
                ready = None
                verdicts = [self._answers[v] if asked_it else v for asked_it, v in answered]
                planner.finish(pend, committed, verdicts)
                continue
            pend, committed = planner.begin(n, item)
            statement_of = {kind[1]: i for i, kind in enumerate(pend.kinds) if kind[0] == "judge"}
            verdicts = []
            slots = []
            start = len(call)
            keys = [_key(req) for req in pend.requests]
            if sure:
                # the item-by-item path's own requests, answered or to ask
                self._own_cands += sum(len(k[2]) for k in set(keys) - self._own)
                self._own.update(keys)
            else:
                fresh = {key for key in keys if key not in self._asked}
                cands = sum(len(k[2]) for k in fresh)
                if (
                    len(self._asked) + len(fresh) > SLACK * len(self._own)
                    or self._asked_cands + cands > SLACK * self._own_cands
                ):
                    break  # asking on guesses would cost more than item by item may
            for r, req in enumerate(pend.requests):
                key = keys[r]
                if key in self.verdicts:
                    verdicts.append(self.verdicts[key])
                    slots.append((False, self.verdicts[key]))
                    continue
                where = (n, statement_of[r])
                stable = [planner.stable_id(c.id) for c in req.candidates]
                if key not in in_call:
                    in_call[key] = len(call)
                    call.append(req)
                    asked.append((where, stable))
                    self._asked.add(key)
                    self._asked_cands += len(key[2])
                slots.append((True, in_call[key]))
                if n + 1 < len(items):  # the last item's guesses would plan nothing after it
                    verdicts.append(_guess(self.model, req, stable, self.seen.get(where)))
            if len(call) > start:
                call.spans.append((start, len(call)))
                if sure:
                    self.resume = (planner.mark(), n)
                    self._ready = (pend, committed, slots)
                    unsure_from = n
                sure = False
                if n + 1 == len(items):
                    break  # nothing after it to plan on guesses; the next pass finishes it
            if sure:
                planner.finish(pend, committed, verdicts)  # what the item-by-item path does, errors too
                continue
            try:
                planner.finish(pend, committed, verdicts)
            except Exception:  # noqa: BLE001 - a guessed path the item-by-item one may never take
                break
        return call, asked


def call_judge(judge: Any, call: Sequence[JudgeRequest]) -> Any:
    """A sync judge's answer to one call; a coroutine judge is refused."""
    verdicts = judge(call)
    if inspect.isawaitable(verdicts):
        if inspect.iscoroutine(verdicts):
            verdicts.close()
        raise TypeError("the judge is a coroutine function: use adeposit or adeposit_many")
    return verdicts


def _is_async(judge: Any) -> bool:
    # a callable object with an ``async def __call__`` counts too
    return inspect.iscoroutinefunction(judge) or inspect.iscoroutinefunction(type(judge).__call__)


async def acall_judge(judge: Any, call: Sequence[JudgeRequest]) -> Any:
    """An async judge answers each item's requests of a call in a call of
    its own, all at once (``asyncio.gather``); a sync judge answers the whole
    call in one."""
    spans = getattr(call, "spans", None)
    if spans and len(spans) > 1 and _is_async(judge):
        parts = await asyncio.gather(*(judge(list(call[a:b])) for a, b in spans))
        out: list[Any] = []
        for (a, b), part in zip(spans, parts):
            if not isinstance(part, (list, tuple)):
                raise TypeError(f"judge must return a list, got {type(part).__name__}")
            if len(part) != b - a:
                raise ValueError(f"judge returned {len(part)} verdicts for {b - a} requests")
            out.extend(part)
        return out
    verdicts = judge(call)
    if inspect.isawaitable(verdicts):
        verdicts = await verdicts
    return verdicts
