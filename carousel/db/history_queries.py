"""The recorded history a replay of past requests is built from: the files each request of a window asked
for, with where they lie on tape, and what the library did for them (reads and mounts). Callers own the
transaction."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from carousel.db.models import Mount, PolicyAudit, QueuedFileRow, Recall, RequestFile, StageRequest


@dataclass(frozen=True, slots=True)
class AskedFile:
    """One file one request asked for, with the request's arrival and this request's outcome."""

    request_id: str
    asked_at: datetime
    priority: int
    group: str
    file_id: int
    path: str
    tape: str | None
    position_bytes: int | None
    size_bytes: int | None
    outcome: str  # LinkState: PENDING, COMPLETED, FAILED, CANCELLED
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class RecordedRead:
    file_id: int
    submitted_at: datetime
    outcome: str | None  # STAGED | FAILED | CANCELLED; None while in flight
    bytes: int


@dataclass(frozen=True, slots=True)
class RecordedMount:
    tape: str
    mounted_at: datetime
    unmounted_at: datetime | None


def asked_files(session: Session, since: datetime, until: datetime, *, limit: int) -> list[AskedFile]:
    """The files asked for by requests created in (since, until], by arrival then the client's order; at most
    `limit` (the caller asks for one more than it accepts, to tell a window that is too big)."""
    found = session.execute(
        select(
            StageRequest.id,
            StageRequest.created_at,
            StageRequest.priority,
            StageRequest.grp,
            RequestFile.file_id,
            RequestFile.path,
            QueuedFileRow.tape,
            QueuedFileRow.position_bytes,
            QueuedFileRow.size_bytes,
            RequestFile.state,
            RequestFile.finished_at,
        )
        .join(RequestFile, RequestFile.request_id == StageRequest.id)
        .join(QueuedFileRow, QueuedFileRow.id == RequestFile.file_id)
        .where(StageRequest.created_at > since, StageRequest.created_at <= until)
        .order_by(StageRequest.created_at, StageRequest.id, RequestFile.ordinal)
        .limit(limit)
    ).all()
    return [AskedFile(*row) for row in found]


def reads_since(session: Session, since: datetime) -> list[RecordedRead]:
    """Every recall handed to the library since `since`."""
    found = session.execute(
        select(Recall.file_id, Recall.submitted_at, Recall.outcome, Recall.bytes).where(
            Recall.submitted_at >= since
        )
    ).all()
    return [RecordedRead(*row) for row in found]


def mounts_since(session: Session, since: datetime, tapes: Collection[str]) -> list[RecordedMount]:
    """The mounts of these tapes that began at or after `since`."""
    wanted = set(tapes)
    found = session.execute(
        select(Mount.tape, Mount.mounted_at, Mount.unmounted_at)
        .where(Mount.mounted_at >= since)
        .order_by(Mount.mounted_at)
    ).all()
    return [RecordedMount(*row) for row in found if row.tape in wanted]


def policy_changes_since(session: Session, since: datetime) -> list[tuple[datetime, str, str, str, int]]:
    """(when, who, old policy, new policy, version) of each change of the active policy since `since`,
    oldest first."""
    found = session.execute(
        select(
            PolicyAudit.at,
            PolicyAudit.who,
            PolicyAudit.old_policy,
            PolicyAudit.new_policy,
            PolicyAudit.version,
        )
        .where(PolicyAudit.at >= since)
        .order_by(PolicyAudit.at)
    ).all()
    return [(row.at, row.who, row.old_policy, row.new_policy, row.version) for row in found]
