"""Queue quotas: how many files a caller, and a group, may have waiting at once. A submit that would go
over answers 429 with a Retry-After hint (nothing is written); one that could never fit answers 413.

Counted in the submitting transaction, holding the caller's and the group's quota locks until it commits
(carousel.db.quota_queries.hold_quotas): submits racing each other are admitted one at a time, so a quota is
never passed, whatever the concurrency, on PostgreSQL and on SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import quota_queries as q
from carousel.domain.callers import Caller
from carousel.domain.errors import TooLarge, TooManyRequests


@dataclass(frozen=True, slots=True)
class QueueQuota:
    per_caller: int | None
    per_group: int | None
    retry_after_s: int

    @property
    def active(self) -> bool:
        return self.per_caller is not None or self.per_group is not None


@dataclass(frozen=True, slots=True)
class QueueUsage:
    caller_queued: int
    group: str | None  # None: the caller has no group, so no group quota bounds it
    group_queued: int | None


def usage(session: Session, caller: Caller, group: str | None = None) -> QueueUsage:
    group = group or caller.default_group
    caller_queued = q.queued_files_of_owner(session, caller.name)
    if not caller.charges_group(group):
        # `default` of callers without a group is no group of theirs: its count would tell one caller how
        # much strangers have queued
        return QueueUsage(caller_queued, None, None)
    return QueueUsage(caller_queued, group, q.queued_files_of_group(session, group))


def hold_quotas(session: Session, caller: Caller, group: str, quota: QueueQuota) -> None:
    """No other submit of this caller, or of this group, counts or queues files until this transaction ends:
    each lock only where its quota applies. A lock without a limit behind it would only queue submits: every
    submit of a group (often the whole site) one after the other, through their commits."""
    group_limited = quota.per_group is not None and caller.charges_group(group)
    q.hold_quotas(
        session,
        caller.name if quota.per_caller is not None else None,
        group if group_limited else None,
    )


def admit(session: Session, caller: Caller, group: str, new_files: int, quota: QueueQuota) -> None:
    """TooManyRequests (or TooLarge) when `new_files` more would go over the caller's or the group's quota."""
    checks = (
        ("caller", caller.name, quota.per_caller, q.queued_files_of_owner),
        # callers without a group share `default` for fair share only, not for a quota (Caller.limit_group)
        ("group", group, quota.per_group if caller.charges_group(group) else None, q.queued_files_of_group),
    )
    for what, name, cap, count in checks:
        if cap is None:
            continue
        if new_files > cap:
            raise TooLarge(f"{new_files} files can never fit the {what} quota of {cap} queued files")
        queued = count(session, name)
        if queued + new_files > cap:
            raise TooManyRequests(
                f"the {what} {name[:128]!r} has {queued} files queued; {new_files} more would pass its quota "
                f"of {cap}: retry once some have been staged",
                retry_after_s=quota.retry_after_s,
            )
