"""Planning one commit of the deposit path, between prepare and commit.

For each deposit (one item of a batch) the planner turns the engine's
``prepare`` answer into judge requests, then the judge's verdicts into the
engine's commit plan. Items of one batch see the items before them: their new
records (as candidates with negative provisional ids), their merges (the
survivor's kept text and owner set) and their exact duplicates.

The steps carry the names of the engine's commit steps (Store::commit in the
C++ engine) that apply them: ``prepare`` (one snapshot), ``begin`` (each
statement's candidates: ``_similar_new_records`` for the batch's own), and
``finish``, which stages each statement with ``_create_record`` or
``_merge_into`` and appends the deposit's plan. Similarities to the batch's
new records come from the engine's kernel (``similarities``), on vectors as
the engine keeps them (``prepare_vectors``), so the planner and the commit
compare the same numbers.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from .. import _core
from .._store.validation import MAX_OWNERS_PER_RECORD, MAX_STATEMENT_BYTES
from ..policies import MergePolicy
from ..records import JudgeRequest, Memory, Supersedes, candidate
from .lexical_candidates import Cand, LexicalCandidates

__all__ = ["Item", "BatchPlanner"]

F32 = npt.NDArray[np.float32]
# How much deeper than the candidates a gated deposit's vector search goes (BatchPlanner._near_args).
_NEAR_DEPTH = 2
# A judge's answer to one request: merge into that id, a new record, or a
# new record that supersedes that id.
Verdict = Union[int, None, Supersedes]


@dataclass
class Item:
    """One validated deposit."""

    owner: str
    statements: list[str]
    vectors: F32
    digests: list[bytes]
    round: int
    # Per statement, the owner's metadata for the record it ends in (a JSON
    # object's text) or None; None: no metadata given.
    metadata: Optional[list[Optional[str]]] = None
    # The deposit's scope ("" the default): its statements meet only records
    # of this scope (the digests are keyed by it, normalize.text_digest).
    scope: str = ""


@dataclass
class _Staged:
    """A record as this batch will leave it (new, or existing and changed).
    A field added here must be copied in _copied."""

    text: str
    owners: set[str]
    round: int
    scope: str = ""


@dataclass
class _Pending:
    """The decisions for one item between requests and verdicts."""

    item: Item
    # the item's vectors as the engine keeps them (unit length under cos)
    kept_vectors: F32
    # per statement: ("exact", target) | ("alias", earlier index) | ("judge", request index) | ("new",)
    kinds: list[tuple[Any, ...]] = field(default_factory=list)
    requests: list[JudgeRequest] = field(default_factory=list)


def _copied(staged: Any) -> Any:
    """A copy of staged records (dict or list) that later merges leave alone.
    Made field by field: the passes copy the batch's staged records at every
    snapshot and restore, and ``dataclasses.replace`` (which inspects the
    class each call) made that a third of a large batch's planning."""
    if isinstance(staged, dict):
        return {k: _Staged(v.text, set(v.owners), v.round, v.scope) for k, v in staged.items()}
    return [_Staged(v.text, set(v.owners), v.round, v.scope) for v in staged]


class BatchPlanner:
    """Plans a batch of deposits against one store snapshot plus the batch's
    own staged changes."""

    def __init__(
        self,
        engine: Any,
        metric: str,
        candidates: int,
        min_similarity: float,
        policy: MergePolicy,
        judge_sees_owners: bool = False,
        lexical_candidates: int = 0,
        lexical_floor: float = 0.0,
        lexical_min_similarity: Optional[float] = None,
    ):
        self.engine = engine
        self.lexical_k = lexical_candidates  # lexical_candidates.py: BM25 candidates added to the vector ones
        self.lexical_floor = lexical_floor  # lexical_candidates.py: a hit's least mutual coverage
        # lexical_candidates.py: a hit's least cosine, never above what a vector candidate needs
        self.lexical_min_similarity = (
            None if lexical_min_similarity is None else min(float(lexical_min_similarity), float(min_similarity))
        )
        self.judge_sees_owners = judge_sees_owners  # else candidates go to the judge with empty owner sets
        self.metric = metric  # kept for callers; the engine's kernels apply it
        self.k = candidates
        self.min_similarity = min_similarity
        self.policy = policy
        self.seq: int = 0
        self.existing: dict[int, _Staged] = {}  # committed records this batch touched
        self.new: list[_Staged] = []  # new records, provisional id -(j+1)
        self._staged_vecs: F32 = np.zeros((0, 0), np.float32)  # rows: new records, as the engine compares them
        self.by_digest: dict[bytes, int] = {}  # normalized text -> record (either kind)
        self.plans: list[_core.CommitPlan] = []
        self.merged: list[list[bool]] = []
        self.origins: list[tuple[int, int]] = []  # new record j came from (item, statement)
        # prepare's near records (engine.prepare's last element): None without a lexical gate
        self._near: Optional[tuple[list[int], Any, Any, list[bool]]] = None

    def rewind(self) -> None:
        """Forgets the batch's staged changes, keeping the snapshot of
        ``prepare``: the batch can be planned again from its first item."""
        self.existing, self.new, self.by_digest = {}, [], {}
        self.plans, self.merged, self.origins = [], [], []

    def mark(self) -> tuple[Any, ...]:
        """The staged state after the items finished so far, for ``restore``."""
        return (_copied(self.existing), _copied(self.new), dict(self.by_digest), len(self.plans))

    def restore(self, mark: tuple[Any, ...]) -> None:
        """Back to the state of ``mark``: the items after it can be planned
        again (the rows of the staged vectors past it are written again)."""
        existing, new, by_digest, n = mark
        self.existing, self.new, self.by_digest = _copied(existing), _copied(new), dict(by_digest)
        del self.plans[n:], self.merged[n:]
        del self.origins[len(self.new) :]  # one origin per new record

    def stable_id(self, rid: int) -> tuple[int, ...]:
        """A record's name that does not change when the batch is planned
        again: (0, id) for a committed record, (1, item, statement) for a new
        one (its provisional id depends on how many new records came before)."""
        return (0, rid) if rid > 0 else (1, *self.origins[-rid - 1])

    # -- views of records as staged ------------------------------------------

    def _memory(
        self,
        rid: int,
        committed: dict[int, tuple[str, tuple[str, ...], int]],
        score: float,
        lexical: Optional[float] = None,
    ) -> Memory:
        if rid < 0 or rid in self.existing:
            s = self.new[-rid - 1] if rid < 0 else self.existing[rid]
            text, rnd, who = s.text, s.round, frozenset(s.owners)
        else:
            text, owners, rnd = committed[rid]
            who = frozenset(owners)
        # Owner sets reach the judge only when the store says so (else empty).
        seen = who if self.judge_sees_owners else frozenset()
        return candidate(rid, text, seen, rnd, float(score), lexical)

    def _staged(self, rid: int, committed: dict[int, tuple[str, tuple[str, ...], int]]) -> _Staged:
        if rid < 0:
            return self.new[-rid - 1]
        if rid not in self.existing:
            text, owners, rnd = committed[rid]
            self.existing[rid] = _Staged(text, set(owners), rnd)
        return self.existing[rid]

    def _similar_new_records(self, kept_vectors: F32) -> Optional[F32]:
        """Scores of each statement (vectors as kept) against every new record
        of the batch so far, by the engine's kernel; None when there are none."""
        if not self.new:
            return None
        scores: F32 = self.engine.similarities(kept_vectors, self._staged_vecs[: len(self.new)])
        return scores

    # -- the two halves of an item ------------------------------------------

    def prepare(self, items: Sequence[Item]) -> None:
        """One engine prepare for the whole batch: one snapshot, and the
        engine searches the statements in parallel."""
        vecs = items[0].vectors if len(items) == 1 else np.concatenate([it.vectors for it in items])
        digests = b"".join(b"".join(it.digests) for it in items)
        scopes = [it.scope for it in items for _ in it.statements]
        if len(set(scopes)) == 1:
            prepared = self.engine.prepare(vecs, digests, self.k, self.min_similarity, scopes[0], *self._near_args())
            self.seq, self._exact, self._offsets, self._ids, self._scores, self._committed, self._near = prepared
        else:
            self._prepare_by_scope(vecs, digests, scopes)
        self._staged_vecs = np.empty((len(digests) // 16, vecs.shape[1]), np.float32)
        self._base: list[int] = []
        at = 0
        for it in items:
            self._base.append(at)
            at += len(it.statements)

    def _near_args(self) -> tuple[int, float]:
        """prepare's near_k and near_floor: with a lexical gate, the records
        the gate lets through are found by the vector search, so the lexical
        step scores only those. Two deeper than the candidates: each record
        of depth costs every deposit an exact re-score, and a statement with
        more records that near than the depth holds falls back to a search
        of the scope, which gives it the same hits or fewer."""
        gate = self.lexical_min_similarity
        if gate is None or self.lexical_k <= 0:
            return 0, math.inf
        return _NEAR_DEPTH, gate

    def _prepare_by_scope(self, vecs: F32, digests: bytes, scopes: list[str]) -> None:
        """prepare for a batch of several scopes: one engine prepare per
        scope (each sees only its scope's records), stitched back into
        statement order. The earliest snapshot's seq is kept, so the commit
        re-checks everything any of them may have missed."""
        exact: list[int] = [0] * len(scopes)
        found: list[tuple[Any, Any]] = [((), ())] * len(scopes)
        near: list[tuple[list[int], list[float], bool]] = [([], [], True)] * len(scopes)
        self._committed = {}
        seqs = []
        for scope in dict.fromkeys(scopes):
            idx = [i for i, s in enumerate(scopes) if s == scope]
            sub = b"".join(digests[16 * i : 16 * i + 16] for i in idx)
            seq, ex, off, ids, scores, committed, close = self.engine.prepare(
                vecs[idx], sub, self.k, self.min_similarity, scope, *self._near_args()
            )
            seqs.append(seq)
            self._committed.update(committed)
            for j, i in enumerate(idx):
                exact[i] = ex[j]
                if close is not None:
                    a, b = close[0][j], close[0][j + 1]
                    near[i] = (close[1][a:b].tolist(), close[2][a:b].tolist(), close[3][j])
                found[i] = (ids[off[j] : off[j + 1]], scores[off[j] : off[j + 1]])
        self.seq, self._exact = min(seqs), exact
        self._near = None
        if self._near_args()[0] > 0:  # stitched as prepare gives it: (offsets, ids, scores, complete)
            near_offsets = [0]
            for got, _, _ in near:
                near_offsets.append(near_offsets[-1] + len(got))
            self._near = (
                near_offsets,
                np.asarray([r for got, _, _ in near for r in got], np.int64),
                np.asarray([s for _, got, _ in near for s in got], np.float32),
                [c for _, _, c in near],
            )
        self._offsets = [0]
        for ids, _ in found:
            self._offsets.append(self._offsets[-1] + len(ids))
        self._ids = np.concatenate([np.asarray(f[0], np.uint64) for f in found])
        self._scores = np.concatenate([np.asarray(f[1], np.float32) for f in found])

    def begin(self, n: int, item: Item) -> tuple[_Pending, dict[int, tuple[str, tuple[str, ...], int]]]:
        """Item n's pending decisions, with the judge requests to send
        (possibly none)."""
        base = self._base[n]
        exact = self._exact[base : base + len(item.statements)]
        offsets = self._offsets[base : base + len(item.statements) + 1]
        cand_ids, cand_scores, committed = self._ids, self._scores, self._committed
        pend = _Pending(item, self.engine.prepare_vectors(item.vectors))
        staged_sims = self._similar_new_records(pend.kept_vectors)
        if staged_sims is not None:
            # The batch's new records of other scopes are never candidates.
            other = [j for j, s in enumerate(self.new) if s.scope != item.scope]
            if other:
                staged_sims[:, other] = -np.inf
        lexical = self._lexical(item, base, staged_sims, item.scope)
        first_with_digest: dict[bytes, int] = {}
        for i, (text, digest) in enumerate(zip(item.statements, item.digests)):
            if digest in self.by_digest:
                pend.kinds.append(("exact", self.by_digest[digest]))
            elif exact[i]:
                pend.kinds.append(("exact", int(exact[i])))
            elif digest in first_with_digest:
                pend.kinds.append(("alias", first_with_digest[digest]))
            else:
                first_with_digest[digest] = i
                cands = [(float(cand_scores[j]), int(cand_ids[j])) for j in range(offsets[i], offsets[i + 1])]
                if staged_sims is not None:
                    hit = np.flatnonzero(staged_sims[i] >= self.min_similarity)
                    cands += [(float(staged_sims[i, j]), -(int(j) + 1)) for j in hit]
                # ties in the order committed records would take: lower id first, the
                # batch's new records after every committed one, in the order made
                cands.sort(key=lambda c: (-c[0], c[1] if c[1] > 0 else (1 << 62) - c[1]))
                cands = cands[: self.k]
                lexical_scores: dict[int, float] = {}
                if lexical is not None:
                    cands, lexical_scores = lexical.union(i, cands, staged_sims)
                if cands:
                    mems = [self._memory(rid, committed, score, lexical_scores.get(rid)) for score, rid in cands]
                    pend.kinds.append(("judge", len(pend.requests)))
                    pend.requests.append(JudgeRequest(text, item.owner, mems))
                else:
                    pend.kinds.append(("new",))
        return pend, committed

    def _lexical(
        self, item: Item, base: int, staged_sims: Optional[Any], scope: str = ""
    ) -> Optional[LexicalCandidates]:
        """The engine's lexical top ``lexical_k`` for each statement of the
        item (prepare's base is its first statement), as the batch so far
        leaves the store; None when lexical candidates are off. Rows of
        committed hits that prepare's snapshot lacked join the committed
        records."""
        planner = self  # the body reads as the planner's view of the batch
        k = planner.lexical_k
        if k <= 0:
            return None
        n = len(item.statements)
        gate = planner.lexical_min_similarity
        near = planner._near  # prepare's near records, when there is a gate

        # Only statements that will meet candidates: not exact duplicates of a record or of the batch's.
        need = [i for i in range(n) if item.digests[i] not in planner.by_digest and not planner._exact[base + i]]
        hits: list[list[tuple[int, float, float]]] = [[] for _ in range(n)]
        also_of: list[dict[int, float]] = [{} for _ in range(n)]
        offsets = planner._offsets[base : base + n + 1]
        vector: list[list[int]] = []  # the vector search's hits, for their BM25 scores
        shown: list[list[int]] = []  # the vector candidates the judge will see: never lexical hits
        only: list[Optional[list[int]]] = []  # the ids each statement's hits may be (None: any of the scope)
        asked: list[int] = []
        for i in need:
            ids: list[int] = planner._ids[offsets[i] : offsets[i + 1]].tolist()  # at most planner.k
            staged: list[int] = []
            if staged_sims is not None:
                staged = np.flatnonzero(staged_sims[i] >= planner.min_similarity).tolist()
            # With a gate a hit is a record the gate lets through: when the vector search found them all
            # (prepare's near ones, complete, and the batch's new records), the engine scores only those, and
            # searches the scope only for hits that hold most of the statement (they pass any gate);
            # None: it searches the scope.
            among: Optional[list[int]] = None
            if near is not None and gate is not None and near[3][base + i]:
                among = near[1][near[0][base + i] : near[0][base + i + 1]].tolist()
                # The committed vector hits too: the batch's new records may push some out of the candidates
                # shown, and those may then be lexical hits (the engine leaves out the ones shown).
                among += ids
                if staged_sims is not None:
                    among += [-(int(j) + 1) for j in np.flatnonzero(staged_sims[i] >= gate)]
            asked.append(i)
            only.append(among)
            if not staged:
                vector.append(ids)
                shown.append(ids)
                continue
            assert staged_sims is not None
            cands: list[Cand] = list(zip(planner._scores[offsets[i] : offsets[i + 1]].tolist(), ids))
            cands += [(float(staged_sims[i, j]), -(j + 1)) for j in staged]
            # as BatchPlanner.begin ranks and cuts them (union checks it)
            cands.sort(key=lambda c: (-c[0], c[1] if c[1] > 0 else (1 << 62) - c[1]))
            vector.append(ids + [-(j + 1) for j in staged])
            shown.append([rid for _, rid in cands[: planner.k]])
        need = asked
        if not need:
            return LexicalCandidates(hits, also_of)
        committed = planner._committed
        # (id, text, may be a hit): the batch's new records of other scopes count in the statistics only,
        # as they would once committed
        overlay = [(rid, s.text, True) for rid, s in planner.existing.items() if s.text != committed[rid][0]]
        overlay += [(-(j + 1), s.text, s.scope == scope) for j, s in enumerate(planner.new)]
        vecs = item.vectors if len(need) == n else item.vectors[need]
        texts = item.statements if len(need) == n else [item.statements[i] for i in need]
        engine, floor = planner.engine, planner.lexical_floor
        least_sim = -math.inf if gate is None else gate

        def ask() -> tuple[Any, tuple[list[float], list[float]]]:
            # One call, one snapshot: the engine weighs each text as weighed_queries does (floor 0: every word),
            # searches down to a share of floor squared (less cannot reach a mutual coverage of floor) and
            # leaves out the hits whose mutual coverage is below floor, as mutual_coverage weighs it, and the
            # committed hits less similar than the gate that hold less than most of the text (union applies
            # both to the batch's new records).
            # Without near records every text searches the scope: no per-text list to convert.
            *answer, floors, most_of = engine.lexical(
                vecs, texts, k, overlay, vector, scope, shown, floor * floor, floor, least_sim, only if near else []
            )
            return answer, (floors, most_of)

        if len(planner._base) == 1:
            # A batch of one item: no later pass plans it again (Passes reuses its first plan).
            answer, (floors, most_of) = ask()
        else:
            # A later pass replans an item on the same staged state: the same question, asked once per attempt.
            cache = planner.__dict__.setdefault("_lexical_cache", {})
            key = (
                base,
                scope,
                tuple(overlay),
                tuple(tuple(v) for v in vector),
                tuple(tuple(v) for v in shown),
                tuple(None if o is None else tuple(o) for o in only),
            )
            if key not in cache:
                cache[key] = ask()
            answer, (floors, most_of) = cache[key]
        floor_of = [0.0] * n
        most_of_score = [math.inf] * n
        offs, ids_, scores, sims, also, records = answer
        for rid, row in records.items():
            committed.setdefault(rid, row)
        ids_, scores, sims = ids_.tolist(), scores.tolist(), sims.tolist()
        for q, i in enumerate(need):
            a, b = offs[q], offs[q + 1]
            hits[i] = list(zip(ids_[a:b], scores[a:b], sims[a:b]))
            also_of[i] = dict(zip(vector[q], also[q]))
            floor_of[i] = floors[q]
            most_of_score[i] = most_of[q]
        return LexicalCandidates(hits, also_of, k, floor_of, gate, most_of_score)

    def finish(
        self,
        pend: _Pending,
        committed: dict[int, tuple[str, tuple[str, ...], int]],
        verdicts: Sequence[Verdict],
    ) -> None:
        """Turns verdicts into the item's commit plan and stages its effects."""
        item = pend.item
        checked = self._checked_verdicts(pend.requests, verdicts)
        targets: list[int] = []
        supersedes: list[int] = []  # per statement: the record a new one supersedes, or 0
        expected: list[Optional[str]] = []
        kept: list[Optional[str]] = []
        merged: list[bool] = []
        resolved: list[int] = []  # the record each statement ends in (provisional ids for new)
        for i, kind in enumerate(pend.kinds):
            target: Optional[int]
            older = 0
            if kind[0] == "exact":
                target = kind[1]
            elif kind[0] == "alias":
                target = resolved[kind[1]]
            elif kind[0] == "judge":
                verdict = checked[kind[1]]
                target = None if isinstance(verdict, Supersedes) else verdict
                older = verdict.id if isinstance(verdict, Supersedes) else 0
            else:
                target = None
            supersedes.append(older)
            if target is None:
                rid = self._create_record(item, i, pend.kept_vectors[i])
                targets.append(0)
                expected.append(None)
                kept.append(None)
                merged.append(False)
            else:
                rid = target
                before, after = self._merge_into(rid, item, i, committed)
                targets.append(rid)
                expected.append(before if rid > 0 else None)
                kept.append(after)
                merged.append(True)
            resolved.append(rid)
            self.by_digest.setdefault(item.digests[i], rid)
        self.plans.append(
            _core.CommitPlan(
                owner=item.owner,
                round=item.round,
                texts=item.statements,
                digests=b"".join(item.digests),
                vectors=item.vectors,
                targets=targets,
                expected=expected,
                kept=kept,
                metadata=item.metadata,
                scope=item.scope,
                supersedes=supersedes if any(supersedes) else None,
            )
        )
        self.merged.append(merged)

    # -- the steps of finish -----------------------------------------------------

    @staticmethod
    def _checked_verdicts(reqs: list[JudgeRequest], verdicts: Sequence[Any]) -> list[Verdict]:
        """The judge's verdicts, each None, one of its request's candidates,
        or Supersedes of one."""
        if len(verdicts) != len(reqs):
            raise ValueError(f"judge returned {len(verdicts)} verdicts for {len(reqs)} requests")
        checked: list[Verdict] = []
        for r, (req, v) in enumerate(zip(reqs, verdicts)):
            if v is None:
                checked.append(None)
                continue
            newer = isinstance(v, Supersedes)
            rid = v.id if newer else v
            if isinstance(rid, bool) or not isinstance(rid, numbers.Integral):
                what = "Supersedes id" if newer else "verdict"
                raise TypeError(
                    f"judge {what} {r} must be an int id, got {type(rid).__name__}"
                    + ("" if newer else " (a verdict is an id, Supersedes(id) or None)")
                )
            ids = [c.id for c in req.candidates]
            if int(rid) not in ids:
                raise ValueError(
                    f"judge returned id {int(rid)} for request {r}, which was not among its candidates {ids}"
                )
            checked.append(Supersedes(int(rid)) if newer else int(rid))
        return checked

    def _create_record(self, item: Item, i: int, kept_vector: F32) -> int:
        """Statement i becomes a new record of the batch; its provisional id."""
        self._staged_vecs[len(self.new)] = kept_vector
        self.new.append(_Staged(item.statements[i], {item.owner}, item.round, item.scope))
        self.origins.append((len(self.plans), i))  # finish appends the item's plan after its statements
        return -len(self.new)

    def _merge_into(
        self, rid: int, item: Item, i: int, committed: dict[int, tuple[str, tuple[str, ...], int]]
    ) -> tuple[str, str]:
        """Statement i merges into record rid: the policy's kept text and the
        owner set as staged. Returns (text before, text after)."""
        staged = self._staged(rid, committed)
        before = staged.text
        after = self.policy(before, item.statements[i])
        if not isinstance(after, str) or not after.strip():
            raise ValueError(f"merge policy returned {after!r}; it must return non-empty text")
        if len(after.encode("utf-8")) > MAX_STATEMENT_BYTES:
            raise ValueError(f"merge policy returned text over {MAX_STATEMENT_BYTES} bytes")
        staged.text = after
        staged.owners.add(item.owner)
        if len(staged.owners) > MAX_OWNERS_PER_RECORD:
            raise ValueError(
                f"statements[{i}] would give record {rid} more than {MAX_OWNERS_PER_RECORD} owners, "
                "the limit per record"
            )
        return before, after
