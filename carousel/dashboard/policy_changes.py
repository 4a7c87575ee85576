"""Where the dashboard reads recent changes of the scheduling policy: the audit trail that policy
administration keeps (carousel.policy_admin) as the database holds it, one line per change, naming the
settings it changed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from carousel.db.policy_queries import audit_entries
from carousel.domain.policy_diff import differences

SHOWN_CHARS = 160  # per cell: a long options table is cut, the audit API has it whole


@dataclass(frozen=True, slots=True)
class PolicyChange:
    at: datetime
    who: str
    what: str  # the setting changed, e.g. "policy", "policy_options.fair_share.weights"
    old: str
    new: str
    why: str


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def recent_policy_changes(session: Session, limit: int) -> list[PolicyChange]:
    """The latest `limit` changes, newest first."""
    changes: list[PolicyChange] = []
    for entry in audit_entries(session, limit=limit):
        found = differences(entry.old, entry.new)
        changes.append(
            PolicyChange(
                at=entry.at,
                who=entry.who,
                what=_cut(", ".join(d.path for d in found)),
                old=_cut("; ".join(d.old for d in found)),
                new=_cut("; ".join(d.new for d in found)),
                why=_cut(entry.reason),
            )
        )
    return changes
