"""Reading and changing the active policy, and reading the audit trail: the use cases behind the admin API
and `carousel policy`.

A change is validated by building the policy before anything is written; a refused one changes nothing.
Each accepted change bumps the version (the cycle rebuilds its policy when the version moves) and adds an
audit entry (who, when, old, new, why) in the same transaction. A change that changes nothing records
nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.config import Settings
from carousel.db import policy_queries as q
from carousel.db.models import PolicySettingsRow
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput
from carousel.domain.policy_choice import AuditEntry, PolicyChoice
from carousel.domain.text import json_text_fault, text_fault
from carousel.policy_admin.model import FROM_SETTINGS, SETTINGS_VERSION, ActivePolicySettings, AuditPage
from carousel.policy_admin.validation import built_policy

MAX_REASON_LENGTH = 2000


def settings_choice(settings: Settings) -> PolicyChoice:
    return PolicyChoice(settings.policy, dict(settings.policy_options))


def _active_of(row: PolicySettingsRow | None, settings: Settings) -> ActivePolicySettings:
    if row is None:
        return ActivePolicySettings(settings_choice(settings), SETTINGS_VERSION, None, FROM_SETTINGS)
    return ActivePolicySettings(
        PolicyChoice(row.policy, dict(row.options)), row.version, row.changed_at, row.changed_by
    )


def active_settings(session: Session, settings: Settings) -> ActivePolicySettings:
    return _active_of(q.active_policy_row(session), settings)


@dataclass(frozen=True, slots=True)
class PolicyChanged:
    active: ActivePolicySettings
    entry: AuditEntry | None  # None: the choice was the active one already, nothing was recorded


def change_policy(
    session: Session,
    settings: Settings,
    clock: Clock,
    *,
    who: str,
    choice: PolicyChoice,
    reason: str,
    expected_version: int | None = None,
) -> PolicyChanged:
    """Makes `choice` the active policy from the next cycle on. InvalidInput (naming the field) when the
    policy does not build from it or no reason is given; Conflict when `expected_version` is not the
    active version (someone changed it meanwhile)."""
    why = reason.strip()
    if not why:
        raise InvalidInput("say why the policy changes: reason must not be empty", field="reason")
    if len(why) > MAX_REASON_LENGTH:
        raise InvalidInput(f"reason is longer than {MAX_REASON_LENGTH} characters", field="reason")
    # the API's schema checks these first; the command line reaches this use case directly
    fault = text_fault(why, one_line=False)
    if fault is not None:
        raise InvalidInput(f"reason {fault}", field="reason")
    found = json_text_fault(dict(choice.options), "options")
    if found is not None:
        raise InvalidInput(f"{found[0]} {found[1]}", field="options")
    built_policy(choice)
    current = _active_of(q.active_policy_row(session, for_update=True), settings)
    if expected_version is not None and expected_version != current.version:
        raise Conflict(
            f"the active policy is at version {current.version}, not {expected_version}: "
            "someone changed it meanwhile; read it again",
            field="expected_version",
        )
    if current.choice == choice:
        return PolicyChanged(current, None)
    now = clock.now()
    version = current.version + 1
    q.save_active_policy(
        session, policy=choice.policy, options=choice.options, version=version, at=now, who=who
    )
    entry = q.add_audit_entry(
        session,
        at=now,
        who=who,
        reason=why,
        version=version,
        old=current.choice,
        new=choice,
    )
    return PolicyChanged(ActivePolicySettings(choice, version, now, who), entry)


def audit_trail(session: Session, *, limit: int, cursor: str | None = None) -> AuditPage:
    """The changes, newest first, `limit` at a time; pass `next_cursor` back for older ones."""
    before: int | None = None
    if cursor is not None:
        if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 18:  # int() refuses "²"
            raise InvalidInput(f"cursor {cursor[:40]!r} is not one this service gave out", field="cursor")
        before = int(cursor)
    found = q.audit_entries(session, limit=limit + 1, before_id=before)
    more = len(found) > limit
    entries = tuple(found[:limit])
    return AuditPage(entries, str(entries[-1].id) if more and entries else None)
