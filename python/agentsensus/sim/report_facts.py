"""The report's section on state facts and plans fenced on memories (`fact_runs`)."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

__all__ = ["facts_section"]

#: (column, key of a fact run's counts)
_COLUMNS = (
    ("state statements", "states"),
    ("of them told", "told"),
    ("linked to an older state", "linked"),
    ("plans", "plans"),
    ("refused by the fence", "refused"),
    ("carried out", "carried_out"),
    ("plans stale for their agent", "stale_plans"),
    ("moves on them", "stale_actions"),
    ("plans outdated", "outdated_plans"),
    ("moves on them", "outdated_actions"),
    ("caught by the fence", "caught"),
    ("replanned", "replanned"),
    ("blocked", "blocked"),
)


def facts_section(metrics: Mapping[str, Any]) -> list[str]:
    """The fence on and off, side by side; nothing when the run made no state-fact runs."""
    facts = metrics.get("facts") or {}
    if not facts:
        return []
    head = "".join(f"<th>{escape(h)}</th>" for h in ["run"] + [c for c, _ in _COLUMNS])
    body = "".join(
        f"<tr><td>{escape(name)}</td>" + "".join(f"<td>{int(run.get(k, 0)):,}</td>" for _, k in _COLUMNS) + "</tr>"
        for name, run in facts.items()
    )
    on, off = facts.get("fence_on", {}), facts.get("fence_off", {})
    return [
        "<h2>Changes of state, and plans fenced on memories</h2>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
        "<p class='note'>Two more runs of the consensus store from its sediment: whoever learns of an "
        "entrance, an exit or a death (its witnesses, or listeners of a speaker who retells it) deposits "
        "the new state, which supersedes the older state for them only. An agent seeking someone absent "
        "derives a plan from a recalled state record that puts them elsewhere, and moves on it the next "
        "round. <i>fence_on</i> derives it through the fence (refused when its memory was superseded "
        "already) and guards the move (replan once from what it recalls now, or block); <i>fence_off</i> "
        "is the control. A plan is stale for its agent when the agent had learned of a later state by the "
        "time it acted, outdated when anyone had. Moves on a stale plan: "
        f"{on.get('stale_actions', 0)} of {on.get('stale_plans', 0)} with the fence, "
        f"{off.get('stale_actions', 0)} of {off.get('stale_plans', 0)} without; on an outdated plan: "
        f"{on.get('outdated_actions', 0)} of {on.get('outdated_plans', 0)} with, "
        f"{off.get('outdated_actions', 0)} of {off.get('outdated_plans', 0)} without.</p>",
    ]
