"""How long requesters wait: per bucket and group, the ages of the files still waiting at the bucket's end
and the waits of the files answered during it.

A requester's file waits from its request's creation until that requester's answer (the link's end: on
disk, failed or cancelled). Ages and waits are the requester's view: a file two requests name counts for
each. Percentiles are numpy's (linear interpolation between the nearest ranks).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from carousel.db import report_queries as q
from carousel.domain.planning import LibraryCosts
from carousel.reports.table import Column, Report, Value
from carousel.reports.throughput import BOUNDS
from carousel.reports.window import Window

ALL_GROUPS = "*"
PERCENTILES = (50.0, 90.0, 99.0)

COLUMNS = (
    *BOUNDS,
    Column("group", "", "the request's group; * for all groups together"),
    Column("waiting", "count", "requesters' files still waiting at the bucket's end"),
    Column("age_p50_s", "s", "median age of those files at the bucket's end (age: since their request)"),
    Column("age_p90_s", "s", "90th percentile of that age"),
    Column("age_p99_s", "s", "99th percentile of that age"),
    Column("age_max_s", "s", "the oldest"),
    Column("answered", "count", "requesters' files that ended on disk or failed during the bucket"),
    Column("wait_p50_s", "s", "median wait of those files: request created -> answer"),
    Column("wait_p90_s", "s", "90th percentile of that wait"),
    Column("wait_max_s", "s", "the longest"),
)

Floats = npt.NDArray[np.float64]


def _stats(values: Floats, percentiles: tuple[float, ...]) -> list[float | None]:
    if values.size == 0:
        return [None] * (len(percentiles) + 1)
    found = np.percentile(values, percentiles)
    return [round(float(v), 3) for v in (*found, values.max())]


def queue_age_report(session: Session, window: Window, now: datetime, costs: LibraryCosts | None) -> Report:
    files = q.requested_files(session, window.since, window.until, window.library)
    groups = sorted({f.group for f in files})
    code = {group: n for n, group in enumerate(groups)}
    group_of = np.array([code[f.group] for f in files], dtype=np.int64)
    created = np.array([f.created for f in files], dtype=np.float64)
    finished = np.array([np.nan if f.finished is None else f.finished for f in files], dtype=np.float64)
    answered = np.array([f.state in ("COMPLETED", "FAILED") for f in files], dtype=bool)

    rows: list[tuple[Value, ...]] = []
    for start, end in window.bucket_bounds():
        t0, t1 = start.timestamp(), end.timestamp()
        # waiting just before t1: arrived before it, not answered before it (NaN compares false: waiting)
        waiting = (created < t1) & ~(finished < t1)
        done = answered & (finished >= t0) & (finished < t1)
        ages = t1 - created
        waits = finished - created
        for name, members in ((ALL_GROUPS, None), *((g, group_of == code[g]) for g in groups)):
            now_waiting = waiting if members is None else waiting & members
            now_done = done if members is None else done & members
            if name != ALL_GROUPS and not (now_waiting.any() or now_done.any()):
                continue
            rows.append(
                (
                    start,
                    end,
                    name,
                    int(now_waiting.sum()),
                    *_stats(ages[now_waiting], PERCENTILES),
                    int(now_done.sum()),
                    *_stats(waits[now_done], PERCENTILES[:2]),
                )
            )
    return Report(
        kind="queue-age",
        title="Queue age and waits",
        window=window,
        generated_at=now,
        columns=COLUMNS,
        rows=rows,
        notes=("ages and waits are per requester's file: a file two requests name counts twice",),
    )
