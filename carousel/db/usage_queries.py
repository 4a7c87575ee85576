"""Drive time per group, for fair share: the mount history split between the groups whose files each mount
read.

A mount's drive time runs from its MOUNTED event to its UNMOUNTED one (or to now while it lasts), clipped to
the accounting window; it is split between groups in proportion to the files of each that it started reading.
The statement reads the mounts of the window with their per-group file counts: it grows with mounts, not with
queued files. Callers own the transaction.

Across libraries (docs/decisions.md §15) a mount's reads are those of its own library, and its drive time
counts in reference drive-seconds: times its library's weight (carousel.domain.libraries.usage_weights; a
library not weighed counts 1, as a site of one library does).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.domain.planning import GroupUsage
from carousel.domain.queue import split_mount_time

DEFAULT_WINDOW_S = 86_400.0


def group_usage(
    session: Session,
    now: datetime,
    window_s: float = DEFAULT_WINDOW_S,
    weights: Mapping[str, float] | None = None,
) -> tuple[GroupUsage, ...]:
    since = now - timedelta(seconds=window_s)
    weight = weights or {}
    rows = session.execute(
        select(Mount.id, Mount.library, Mount.mounted_at, Mount.unmounted_at, QueuedFileRow.grp, func.count())
        .join(
            Recall,
            and_(
                Recall.library == Mount.library,
                Recall.tape == Mount.tape,
                Recall.drive == Mount.drive,
                Recall.started_at >= Mount.mounted_at,
                or_(Mount.unmounted_at.is_(None), Recall.started_at <= Mount.unmounted_at),
            ),
        )
        .join(QueuedFileRow, QueuedFileRow.id == Recall.file_id)
        .where(or_(Mount.unmounted_at.is_(None), Mount.unmounted_at > since))
        .group_by(Mount.id, Mount.library, Mount.mounted_at, Mount.unmounted_at, QueuedFileRow.grp)
    ).all()
    mounts: dict[int, tuple[float, dict[str, int]]] = {}  # mount id -> (drive seconds, files per group)
    for mount_id, library, mounted_at, unmounted_at, grp, files in rows:
        start = max(mounted_at, since)
        end = min(unmounted_at or now, now)
        seconds = max(0.0, (end - start).total_seconds()) * weight.get(library, 1.0)
        mounts.setdefault(mount_id, (seconds, {}))[1][grp] = int(files)
    return split_mount_time(mounts.values())
