"""What a record keeps when one of several owners forgets it: the merge
policy's choice among the statements the other owners deposited (the
engine's said rows), so that none of the forgetter's words stay (see
docs/reliability.md, "What forget removes")."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from ..policies import MergePolicy
from .normalize import text_digest
from .validation import MAX_STATEMENT_BYTES

__all__ = ["ForgetPlan", "plan_forget"]


class ForgetPlan(NamedTuple):
    """The arguments of the engine's forget after (owner, id): what the
    plan saw (text, row count, largest row n: the engine refuses the plan
    when the record changed since) and what the record becomes."""

    expected_text: str
    expected_rows: int
    expected_last: int
    text: str
    vector_from: int
    digests: list[bytes]


def plan_forget(
    owner: str, text: str, rows: Sequence[tuple[int, str, int, str]], policy: MergePolicy, scope: str = ""
) -> ForgetPlan:
    """``rows`` are the record's said rows ``(n, owner, round, text)``, n
    ascending. The record keeps its text when another owner deposited those
    exact words; otherwise the policy folds the other owners' statements,
    oldest first, as if they had merged in that order. The record's vector
    comes from the statement whose text it keeps (else the oldest other
    one) when the forgetter's statement gave it (row 0). ``scope`` is the
    record's: its digests are keyed by it."""
    others = [r for r in rows if r[1] != owner]
    last = rows[-1][0] if rows else 0
    if not others:
        # The last owner (the engine deletes the record) or a record of
        # schema 1 (no rows: only the owner's merge-log entries go).
        return ForgetPlan(text, len(rows), last, text, 0, [])
    texts = [r[3] for r in others]
    kept = text
    if kept not in texts:
        kept = texts[0]
        for incoming in texts[1:]:
            kept = policy(kept, incoming)
            if not isinstance(kept, str) or not kept.strip():
                raise ValueError(f"merge policy returned {kept!r}; it must return non-empty text")
            if len(kept.encode("utf-8")) > MAX_STATEMENT_BYTES:
                raise ValueError(f"merge policy returned text over {MAX_STATEMENT_BYTES} bytes")
    with_vector = [r for r in others if r[0] != 0]
    source = next((r[0] for r in with_vector if r[3] == kept), with_vector[0][0] if with_vector else 0)
    digests = sorted({text_digest(t, scope) for t in [*texts, kept]})
    return ForgetPlan(text, len(rows), last, kept, source, digests)
