"""Reports, dashboard and metrics over a week of synthetic history (8 drives reading back to back).

    .venv/bin/python -m bench.bench_reports [--days 7] [--drives 8] [--url DATABASE_URL]

The history is written straight into a fresh database (a temporary SQLite file, or the empty database --url
names, migrated first): mounts of about ten minutes on every drive, each reading a dozen files or so, one
request per hundred files. Then, each timed best of three:

- the library report over the whole week by hour, as the service computes it (reads inside one bucket summed
  by the database, the few over an edge shared in Python), against the baseline of computing the same table
  the straightforward way, every read and mount of the window fetched and handled in Python (the run checks
  that both agree, column by column);
- the drives, mounts and queue-age reports, the dashboard, and one /metrics collection.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select

from carousel.dashboard.view import build_dashboard
from carousel.db.engine import make_engine, make_session_factory, upgrade_to_head
from carousel.db.models import Mount, QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import LinkState
from carousel.observability.database_collector import DatabaseCollector
from carousel.reports.catalog import build_report
from carousel.reports.window import Bucket, make_window, spread
from hsm_adapters.simulated.adapter import build_simulated_adapter

START = datetime(2026, 1, 5, tzinfo=UTC)
GROUPS = ("atlas", "cms", "star", "alice")


def write_history(url: str, days: int, drives: int, seed: int = 1) -> tuple[int, int]:
    """Mounts and reads on every drive, back to back, for `days`; returns (mounts, reads)."""
    rng = random.Random(seed)
    files: list[dict[str, Any]] = []
    recalls: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    end = START + timedelta(days=days)
    for d in range(drives):
        drive = f"drive{d:02d}"
        t = START + timedelta(seconds=rng.uniform(0, 300))
        while t < end:
            tape = f"T{rng.randrange(2000):05d}"
            mounted = t + timedelta(seconds=28)
            cursor = mounted
            reads = rng.randint(1, 25)
            for _ in range(reads):
                file_id = len(files) + 1
                size = int(rng.lognormvariate(21, 1.2))
                submitted = mounted - timedelta(seconds=rng.uniform(28, 600))
                duration = rng.uniform(5, 90) + size / 360e6
                started, finished = cursor, cursor + timedelta(seconds=duration)
                grp = rng.choice(GROUPS)
                files.append(
                    {
                        "id": file_id,
                        "path": f"/bench/{tape}/{file_id}",
                        "state": "STAGED",
                        "tape": tape,
                        "size_bytes": size,
                        "grp": grp,
                        "queued_at": submitted - timedelta(seconds=rng.uniform(0, 3600)),
                        "finished_at": finished,
                    }
                )
                recalls.append(
                    {
                        "file_id": file_id,
                        "batch_key": f"b{file_id}",
                        "tape": tape,
                        "drive": drive,
                        "submitted_at": submitted,
                        "started_at": started,
                        "finished_at": finished,
                        "outcome": "STAGED",
                        "bytes": size,
                    }
                )
                cursor = finished
            unmounted = cursor + timedelta(seconds=rng.uniform(60, 180))
            mounts.append(
                {
                    "tape": tape,
                    "drive": drive,
                    "mounted_at": mounted,
                    "unmounted_at": unmounted,
                    "files": reads,
                    "bytes": sum(f["size_bytes"] for f in files[-reads:]),
                }
            )
            t = unmounted + timedelta(seconds=13)
    requests: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    for n in range(0, len(files), 100):
        chunk = files[n : n + 100]
        request_id = f"req-{n // 100:08d}"
        created = min(f["queued_at"] for f in chunk)
        requests.append(
            {
                "id": request_id,
                "owner": "bench",
                "grp": chunk[0]["grp"],
                "api": "native",
                "state": "DONE",
                "files_total": len(chunk),
                "created_at": created,
            }
        )
        links += [
            {
                "request_id": request_id,
                "ordinal": i,
                "file_id": f["id"],
                "path": f["path"],
                "state": LinkState.COMPLETED.value,
                "finished_at": f["finished_at"],
            }
            for i, f in enumerate(chunk)
        ]
    engine = make_engine(url)
    with engine.begin() as connection:
        for model, rows in (
            (QueuedFileRow, files),
            (Recall, recalls),
            (Mount, mounts),
            (StageRequest, requests),
            (RequestFile, links),
        ):
            for n in range(0, len(rows), 20_000):
                connection.execute(insert(model), rows[n : n + 20_000])
    engine.dispose()
    return len(mounts), len(recalls)


def best_of(runs: int, work: Callable[[], object]) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--drives", type=int, default=8)
    parser.add_argument("--url", help="an empty database to use (default: a temporary SQLite file)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = options.url or f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        upgrade_to_head(url)
        started = time.perf_counter()
        mounts, reads = write_history(url, options.days, options.drives)
        print(
            f"history: {options.days} days, {options.drives} drives, {mounts:,} mounts, {reads:,} reads "
            f"({time.perf_counter() - started:.1f} s to write) on {url.split(':')[0]}"
        )
        engine = make_engine(url)
        factory = make_session_factory(engine)
        now = START + timedelta(days=options.days)
        clock = ManualClock(now)
        week = make_window(START, now, Bucket.HOUR, now)

        def service() -> object:
            with factory() as session:
                return build_report("library", session, week, now)

        def baseline() -> object:
            """The same table the straightforward way: every read and mount of the window fetched, reads put
            in their mounts and shared between buckets in Python."""
            edges = week.edges
            table: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            with factory() as session:
                reads = session.execute(
                    select(
                        Recall.tape,
                        Recall.drive,
                        Recall.outcome,
                        Recall.submitted_at,
                        Recall.started_at,
                        Recall.finished_at,
                        Recall.bytes,
                    ).where(Recall.finished_at > week.since, Recall.submitted_at < week.until)
                ).all()
                mounts = session.execute(
                    select(Mount.tape, Mount.drive, Mount.mounted_at, Mount.unmounted_at, Mount.files).where(
                        Mount.mounted_at < week.until, Mount.unmounted_at > week.since
                    )
                ).all()
            first_submitted: dict[tuple[str, str | None, datetime], datetime] = {}
            mounts_of: dict[tuple[str, str | None], list[Any]] = defaultdict(list)
            for mount in mounts:
                mounts_of[(mount.tape, mount.drive)].append(mount)
            for tape, drive, outcome, submitted, started, finished, size in reads:
                ended_in = week.row_at(finished.timestamp()) if finished is not None else None
                if ended_in is not None and outcome is not None:
                    table[ended_in][outcome] += 1
                if started is None or finished is None:
                    continue
                s, f = started.timestamp(), finished.timestamp()
                for row, seconds in spread(s, f, edges):
                    table[row]["reading_s"] += seconds
                    table[row]["bytes"] += size * seconds / (f - s) if f > s else 0
                for mount in mounts_of[(tape, drive)]:
                    if mount.mounted_at <= started <= mount.unmounted_at:
                        key = (tape, drive, mount.mounted_at)
                        first_submitted[key] = min(first_submitted.get(key, submitted), submitted)
            for mount in mounts:
                m, u = mount.mounted_at.timestamp(), mount.unmounted_at.timestamp()
                for row, seconds in spread(m, u, edges):
                    table[row]["mounted_s"] += seconds
                mounted_in = week.row_at(m)
                if mounted_in is not None:
                    table[mounted_in]["mounts"] += 1
                    first = first_submitted.get((mount.tape, mount.drive, mount.mounted_at))
                    if first is not None and first <= mount.mounted_at:
                        table[mounted_in]["mount_wait_s"] += (mount.mounted_at - first).total_seconds()
                        table[mounted_in]["waited"] += 1
            return table

        service_s, report = best_of(3, service)
        baseline_s, table = best_of(3, baseline)
        records = report.records()  # type: ignore[attr-defined]
        for index, record in enumerate(records):
            mine = table[index]  # type: ignore[index]
            assert abs(record["reading_s"] - mine["reading_s"]) < 0.01, (index, record, mine)
            assert abs(record["bytes"] - mine["bytes"]) <= 1, (index, record, mine)
            assert abs(record["mounted_s"] - mine["mounted_s"]) < 0.01, (index, record, mine)
            assert (record["mounts"], record["files"]) == (mine["mounts"], mine["STAGED"]), (
                index,
                record,
                mine,
            )
            if mine["waited"]:
                assert abs(record["mount_wait_s"] - mine["mount_wait_s"] / mine["waited"]) < 0.01
        print(
            f"library report, {len(records)} hours: {service_s * 1000:.0f} ms; "
            f"baseline (every read in Python) {baseline_s * 1000:.0f} ms; ratio {baseline_s / service_s:.2f}"
        )

        for kind, window in (
            ("drives", week),
            ("mounts", make_window(now - timedelta(days=1), now, Bucket.HOUR, now)),
            ("queue-age", week),
        ):

            def build(kind: str = kind, window: Any = window) -> object:
                with factory() as session:
                    return build_report(kind, session, window, now)

            seconds, built = best_of(3, build)
            print(f"{kind} report: {seconds * 1000:.0f} ms ({len(built.rows):,} rows)")  # type: ignore[attr-defined]

        adapter = build_simulated_adapter({"profile": "lto8", "drives": options.drives}, clock)

        def dashboard() -> object:
            with factory() as session:
                return build_dashboard(session, adapter, now, adapter.library_costs(), site="bench")

        seconds, _ = best_of(3, dashboard)
        print(f"dashboard (last 24 h): {seconds * 1000:.0f} ms")
        collector = DatabaseCollector(factory, clock)
        seconds, _ = best_of(3, lambda: list(collector.collect()))
        print(f"/metrics database figures (queue, last hour's efficiency): {seconds * 1000:.0f} ms")
        adapter.close()
        engine.dispose()


if __name__ == "__main__":
    main()
