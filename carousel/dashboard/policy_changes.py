"""Where the dashboard reads recent changes of the scheduling policy.

carousel does not yet record changes of the policy (they are made in the settings, read at start), so there
are none to show and the panel says "none recorded". Policy administration, which records every change
(who, when, old, new, why) in an audit trail, answers this function from that trail; the dashboard needs no
other change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session


@dataclass(frozen=True, slots=True)
class PolicyChange:
    at: datetime
    who: str
    what: str  # the setting changed, e.g. "policy", "policy_options.fair_share.weights"
    old: str
    new: str
    why: str


def recent_policy_changes(session: Session, limit: int) -> list[PolicyChange]:
    """The latest `limit` changes, newest first: none until an audit trail is kept."""
    return []
