"""Drive time per group, for fair share: the mount history split between the groups whose files each mount
read.

A mount's drive time runs from its MOUNTED event to its UNMOUNTED one (or to now while it lasts), clipped to
the accounting window; it is split between groups in proportion to the files of each that it started reading.
The statement reads the mounts of the window with their per-group file counts, each mount's recalls found by
the index on their tape, drive and start (revision 0012). Callers own the transaction.

A closed mount's files per group do not change any more (its reads were applied before its UNMOUNTED event),
so GroupUsageLedger keeps them: each call then asks the database only for the open mounts and those closed
since the last call, a few dozen, however long the history of the window (without it the statement read
every recall of the window, every cycle).

Across libraries (docs/decisions.md §17) a mount's reads are those of its own library, and its drive time
counts in reference drive-seconds: times its library's weight (carousel.domain.libraries.usage_weights; a
library not weighed counts 1, as a site of one library does).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import BigInteger, all_, and_, bindparam, func, or_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.domain.planning import GroupUsage
from carousel.domain.queue import split_mount_time

DEFAULT_WINDOW_S = 86_400.0


@dataclass(slots=True)
class _MountFiles:
    library: str
    mounted_at: datetime
    unmounted_at: datetime | None
    files: dict[str, int] = field(default_factory=dict)  # group -> files the mount started reading


def _mount_files(session: Session, since: datetime, known: Collection[int]) -> dict[int, _MountFiles]:
    """The mounts of the window but those `known`, with their files per group (none for a mount that read
    nothing: it is known then too)."""
    query = (
        select(
            Mount.id,
            Mount.library,
            Mount.mounted_at,
            Mount.unmounted_at,
            QueuedFileRow.grp,
            func.count(QueuedFileRow.id),
        )
        .outerjoin(
            Recall,
            and_(
                Recall.library == Mount.library,
                Recall.tape == Mount.tape,
                Recall.drive == Mount.drive,
                Recall.started_at >= Mount.mounted_at,
                or_(Mount.unmounted_at.is_(None), Recall.started_at <= Mount.unmounted_at),
            ),
        )
        .outerjoin(QueuedFileRow, QueuedFileRow.id == Recall.file_id)
        .where(or_(Mount.unmounted_at.is_(None), Mount.unmounted_at > since))
        .group_by(Mount.id, Mount.library, Mount.mounted_at, Mount.unmounted_at, QueuedFileRow.grp)
    )
    if known and session.get_bind().dialect.name == "postgresql":
        # one array parameter, however many mounts are known
        query = query.where(Mount.id != all_(bindparam("known", sorted(known), type_=ARRAY(BigInteger))))
    elif known:
        query = query.where(Mount.id.not_in(sorted(known)))
    mounts: dict[int, _MountFiles] = {}
    for mount_id, library, mounted_at, unmounted_at, grp, files in session.execute(query):
        mount = mounts.setdefault(mount_id, _MountFiles(library, mounted_at, unmounted_at))
        if grp is not None:
            mount.files[grp] = int(files)
    return mounts


def _usage(
    mounts: Collection[_MountFiles], since: datetime, now: datetime, weights: Mapping[str, float]
) -> tuple[GroupUsage, ...]:
    def seconds(mount: _MountFiles) -> float:
        start = max(mount.mounted_at, since)
        end = min(mount.unmounted_at or now, now)
        return max(0.0, (end - start).total_seconds()) * weights.get(mount.library, 1.0)

    return split_mount_time((seconds(m), m.files) for m in mounts)


class GroupUsageLedger:
    """group_usage for one process that asks again and again: closed mounts are read once and kept until they
    leave the window."""

    def __init__(self) -> None:
        self._closed: dict[int, _MountFiles] = {}

    def __call__(
        self,
        session: Session,
        now: datetime,
        window_s: float = DEFAULT_WINDOW_S,
        weights: Mapping[str, float] | None = None,
    ) -> tuple[GroupUsage, ...]:
        since = now - timedelta(seconds=window_s)
        self._closed = {
            mount_id: mount
            for mount_id, mount in self._closed.items()
            if mount.unmounted_at is not None and mount.unmounted_at > since
        }
        fresh = _mount_files(session, since, self._closed.keys())
        self._closed.update((i, m) for i, m in fresh.items() if m.unmounted_at is not None)
        open_now = [m for m in fresh.values() if m.unmounted_at is None]
        return _usage([*self._closed.values(), *open_now], since, now, weights or {})


def group_usage(
    session: Session,
    now: datetime,
    window_s: float = DEFAULT_WINDOW_S,
    weights: Mapping[str, float] | None = None,
) -> tuple[GroupUsage, ...]:
    """Drive seconds per group over the window ending at `now`, by group name (reference drive-seconds with
    `weights` per library)."""
    return GroupUsageLedger()(session, now, window_s, weights)
