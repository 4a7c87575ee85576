"""The SQL of policy administration: the one row of the active policy and the audit trail of its changes.

Callers own the transaction; nothing here commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from carousel.db.models import PolicyAudit, PolicySettingsRow
from carousel.domain.policy_choice import AuditEntry, PolicyChoice

ROW_ID = 1


def active_policy_row(session: Session, *, for_update: bool = False) -> PolicySettingsRow | None:
    """The admins' choice, or None while the settings' policy is active. `for_update` locks the row, so
    two changes made at once take turns (PostgreSQL; SQLite has one writer at a time anyway)."""
    statement = select(PolicySettingsRow).where(PolicySettingsRow.id == ROW_ID)
    if for_update:
        statement = statement.with_for_update()
    return session.scalars(statement).one_or_none()


def save_active_policy(
    session: Session, *, policy: str, options: Mapping[str, Any], version: int, at: datetime, who: str
) -> None:
    row = active_policy_row(session)
    if row is None:
        session.add(
            PolicySettingsRow(
                id=ROW_ID,
                policy=policy,
                options=dict(options),
                version=version,
                changed_at=at,
                changed_by=who,
            )
        )
    else:
        row.policy, row.options, row.version = policy, dict(options), version
        row.changed_at, row.changed_by = at, who
    session.flush()


def add_audit_entry(
    session: Session,
    *,
    at: datetime,
    who: str,
    reason: str,
    version: int,
    old: PolicyChoice,
    new: PolicyChoice,
) -> AuditEntry:
    entry = PolicyAudit(
        at=at,
        who=who,
        reason=reason,
        version=version,
        old_policy=old.policy,
        old_options=dict(old.options),
        new_policy=new.policy,
        new_options=dict(new.options),
    )
    session.add(entry)
    session.flush()
    return _audit_entry(entry)


def audit_entries(session: Session, *, limit: int, before_id: int | None = None) -> list[AuditEntry]:
    """Newest first; `before_id` pages back from an entry."""
    statement = select(PolicyAudit).order_by(PolicyAudit.id.desc()).limit(limit)
    if before_id is not None:
        statement = statement.where(PolicyAudit.id < before_id)
    return [_audit_entry(row) for row in session.scalars(statement)]


def _audit_entry(row: PolicyAudit) -> AuditEntry:
    return AuditEntry(
        id=row.id,
        at=row.at,
        who=row.who,
        reason=row.reason,
        version=row.version,
        old=PolicyChoice(row.old_policy, dict(row.old_options)),
        new=PolicyChoice(row.new_policy, dict(row.new_options)),
    )
