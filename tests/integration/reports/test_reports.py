"""The reports against the raw history they come from: each figure is recomputed here, in plain Python over
the rows of recalls, mounts and requests, and compared with what the reports say (both databases)."""

from __future__ import annotations

import csv
import io
import statistics
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread
from sqlalchemy import Integer, literal, select

from carousel.db.models import Mount, Recall, RequestFile, StageRequest
from carousel.db.report_queries import epoch_bucket, epoch_seconds
from carousel.reports.catalog import KINDS, build_report
from carousel.reports.figures import drawn, png
from carousel.reports.table import Report, to_csv, to_document
from carousel.reports.window import Bucket, Window, make_window
from tests.integration.reports.conftest import Recorded


def odd_window(recorded: Recorded, bucket: Bucket = Bucket.HOUR) -> Window:
    """A window whose edges fall inside hours and inside reads: the clipping paths all get exercised."""
    history = recorded.history
    return make_window(
        history.started + timedelta(minutes=17, seconds=13),
        history.ended - timedelta(minutes=2, seconds=41),
        bucket,
        recorded.clock.now(),
    )


def report(recorded: Recorded, kind: str, window: Window) -> Report:
    with recorded.factory() as session:
        return build_report(
            kind, session, window, recorded.clock.now(), recorded.history.adapter.library_costs()
        )


def overlap(start: datetime, end: datetime, lo: datetime, hi: datetime) -> float:
    return max((min(end, hi) - max(start, lo)).total_seconds(), 0.0)


def rows_by(report: Report, *keys: str) -> dict[tuple[object, ...], dict[str, object]]:
    return {tuple(r[k] for k in keys): r for r in report.records()}


def test_drive_figures_recomputed_from_the_raw_rows(recorded: Recorded) -> None:
    """Bytes per second, reading time, mounted time, efficiency, files, failures and mounts of every drive
    in every bucket, from the recalls and mounts rows."""
    window = odd_window(recorded)
    now = recorded.clock.now()
    with recorded.factory() as session:
        recalls = session.scalars(select(Recall)).all()
        mounts = session.scalars(select(Mount)).all()
    got = rows_by(report(recorded, "drives", window), "start", "drive")
    assert len(got) >= 4, "the history should span several drives and buckets"
    compared = 0
    for lo, hi in window.bucket_bounds():
        for drive in sorted({r.drive for r in recalls if r.drive}):
            reads = [r for r in recalls if r.drive == drive and r.started_at and r.finished_at]
            byte_sum = sum(
                r.bytes
                * overlap(r.started_at, r.finished_at, lo, hi)
                / (r.finished_at - r.started_at).total_seconds()
                for r in reads
                if r.finished_at > r.started_at
            )
            reading = sum(overlap(r.started_at, r.finished_at, lo, hi) for r in reads)
            own = [m for m in mounts if m.drive == drive]
            mounted = sum(
                overlap(m.mounted_at, m.unmounted_at or min(now, window.until), lo, hi) for m in own
            )
            ended = [r for r in recalls if r.drive == drive and r.finished_at and lo <= r.finished_at < hi]
            row = got.get((lo, drive))
            if row is None:
                assert byte_sum == reading == mounted == 0 and not ended
                continue
            compared += 1
            assert row["bytes_per_s"] == pytest.approx(
                byte_sum / (hi - lo).total_seconds(), rel=1e-6, abs=0.1
            )
            assert row["bytes"] == pytest.approx(byte_sum, abs=1)
            assert row["reading_s"] == pytest.approx(reading, abs=2e-3)
            assert row["mounted_s"] == pytest.approx(mounted, abs=2e-3)
            if mounted:
                assert row["efficiency"] == pytest.approx(reading / mounted, abs=1e-4)
            assert row["files"] == sum(1 for r in ended if r.outcome == "STAGED")
            assert row["failed"] == sum(1 for r in ended if r.outcome == "FAILED")
            assert row["mounts"] == sum(1 for m in own if lo <= m.mounted_at < hi)
    assert compared >= 4
    failed = sum(int(r["failed"]) for r in got.values())  # type: ignore[call-overload]
    assert failed > 0, "the history's read errors should show"


def test_the_library_is_the_sum_of_its_drives_and_groups_share_its_reading_time(recorded: Recorded) -> None:
    window = odd_window(recorded)
    library = report(recorded, "library", window).records()
    drives = report(recorded, "drives", window).records()
    groups = report(recorded, "groups", window).records()
    assert len(library) == window.buckets == 2
    for row in library:
        start = row["start"]
        mine = [d for d in drives if d["start"] == start]
        for name in ("mounts", "files", "failed"):
            assert row[name] == sum(d[name] for d in mine)  # type: ignore[misc]
        for name in ("mounted_s", "reading_s"):
            assert row[name] == pytest.approx(sum(d[name] for d in mine), abs=0.01)  # type: ignore[misc]
        theirs = [g for g in groups if g["start"] == start]
        assert sum(g["files"] for g in theirs) == row["files"]  # type: ignore[misc]
        assert sum(g["reading_s"] for g in theirs) == pytest.approx(row["reading_s"], abs=0.01)  # type: ignore[misc]
        assert sum(g["reading_share"] for g in theirs) == pytest.approx(1.0, abs=1e-3)  # type: ignore[misc]


def test_files_per_mount_and_remounts_per_day_from_the_mounts_rows(recorded: Recorded) -> None:
    history = recorded.history
    window = make_window(history.started, history.ended, Bucket.DAY, recorded.clock.now())
    with recorded.factory() as session:
        mounts = session.scalars(select(Mount)).all()
    per_tape = Counter(m.tape for m in mounts)
    (day,) = report(recorded, "remounts", window).records()
    assert day["mounts"] == len(mounts)
    assert day["tapes_mounted"] == len(per_tape)
    assert day["remounts"] == len(mounts) - len(per_tape) > 0
    assert day["tapes_remounted"] == sum(1 for n in per_tape.values() if n > 1)
    assert day["most_mounts"] == max(per_tape.values())
    assert per_tape[str(day["most_mounted_tape"])] == max(per_tape.values())
    (library,) = report(recorded, "library", window).records()
    assert library["files_per_mount"] == pytest.approx(sum(m.files for m in mounts) / len(mounts), abs=0.01)
    tapes = rows_by(report(recorded, "tapes", window), "tape")
    for tape, n in per_tape.items():
        assert tapes[(tape,)]["mounts"] == n
        assert tapes[(tape,)]["remounts"] == n - 1


def test_each_mount_session_with_the_reads_it_holds(recorded: Recorded) -> None:
    history = recorded.history
    window = make_window(history.started, history.ended, Bucket.HOUR, recorded.clock.now())
    with recorded.factory() as session:
        mounts = {m.id: m for m in session.scalars(select(Mount))}
        recalls = session.scalars(select(Recall)).all()
    rows = report(recorded, "mounts", window).records()
    assert {r["mount"] for r in rows} == set(mounts)
    for row in rows:
        mount = mounts[int(row["mount"])]  # type: ignore[arg-type]
        end = mount.unmounted_at or recorded.clock.now()
        during = [
            r
            for r in recalls
            if r.tape == mount.tape
            and r.drive == mount.drive
            and r.started_at
            and mount.mounted_at <= r.started_at <= end
        ]
        assert row["reads"] == len(during)
        reading = sum((r.finished_at - r.started_at).total_seconds() for r in during if r.finished_at)
        assert row["reading_s"] == pytest.approx(reading, abs=2e-3)
        assert row["files"] == mount.files and row["bytes"] == mount.bytes
        first = min(r.submitted_at for r in during) if during else None
        if first is not None and first <= mount.mounted_at:
            assert row["mount_wait_s"] == pytest.approx((mount.mounted_at - first).total_seconds(), abs=2e-3)
    waits = [r["mount_wait_s"] for r in rows if r["mount_wait_s"] is not None]
    # a mount waits at least the robot exchange and the load (13 s + 15 s on LTO-8)
    assert waits and min(waits) >= 28.0 - 1e-3  # type: ignore[type-var]


def test_queue_ages_and_waits_from_the_requests(recorded: Recorded) -> None:
    window = odd_window(recorded)
    with recorded.factory() as session:
        links = session.execute(
            select(
                StageRequest.grp, StageRequest.created_at, RequestFile.finished_at, RequestFile.state
            ).join(StageRequest, StageRequest.id == RequestFile.request_id)
        ).all()
    got = rows_by(report(recorded, "queue-age", window), "start", "group")
    checked_waiting = 0
    for lo, hi in window.bucket_bounds():
        for group in ("*", "atlas", "cms", "star"):
            mine = [link for link in links if group in ("*", link.grp)]
            ages = [
                (hi - link.created_at).total_seconds()
                for link in mine
                if link.created_at < hi and (link.finished_at is None or link.finished_at >= hi)
            ]
            waits = [
                (link.finished_at - link.created_at).total_seconds()
                for link in mine
                if link.state in ("COMPLETED", "FAILED") and link.finished_at and lo <= link.finished_at < hi
            ]
            row = got.get((lo, group))
            if row is None:
                assert not ages and not waits and group != "*"
                continue
            assert row["waiting"] == len(ages) and row["answered"] == len(waits)
            if ages:
                checked_waiting += 1
                assert row["age_p50_s"] == pytest.approx(statistics.median(ages), abs=1e-3)
                assert row["age_max_s"] == pytest.approx(max(ages), abs=1e-3)
            if len(waits) >= 2:
                p90 = statistics.quantiles(waits, n=10, method="inclusive")[8]  # numpy's linear percentile
                assert row["wait_p90_s"] == pytest.approx(p90, abs=1e-3)
    assert checked_waiting > 0, "the history ends with files still waiting"


def test_every_kind_as_json_and_csv(recorded: Recorded) -> None:
    window = odd_window(recorded)
    for kind in KINDS:
        built = report(recorded, kind, window)
        document = to_document(built)
        names = [c["name"] for c in document["columns"]]
        assert all(set(row) == set(names) for row in document["rows"])
        lines = list(csv.reader(io.StringIO(to_csv(built))))
        assert lines[0] == names and len(lines) == len(built.rows) + 1


@pytest.mark.parametrize("recorded", ["sqlite"], indirect=True)  # figures do not depend on the database
def test_every_kind_as_a_figure(recorded: Recorded) -> None:
    window = odd_window(recorded)
    for kind in KINDS:
        pixels = imread(io.BytesIO(png(report(recorded, kind, window))), format="png")
        assert pixels.shape[:2] == (460, 1000), kind
        assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[2])[::97]}) > 20, (
            f"{kind}: a blank figure"
        )


def time_labels_too_close(figure: Figure, gap_px: float = 4.0) -> list[tuple[str, str]]:
    """Neighbouring x tick labels of each axes (those inside its limits, as drawn) with less than gap_px
    between them."""
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    close = []
    for axes in figure.axes:
        low, high = sorted(axes.get_xlim())
        ticks = zip(axes.xaxis.get_majorticklocs(), axes.xaxis.get_major_ticks(), strict=False)
        shown = [tick.label1 for at, tick in ticks if low <= at <= high and tick.label1.get_text()]
        boxes = sorted(
            ((label.get_window_extent(renderer), label.get_text()) for label in shown), key=lambda b: b[0].x0
        )
        close += [(a, b) for (box_a, a), (box_b, b) in pairwise(boxes) if box_b.x0 - box_a.x1 < gap_px]
    return close


@pytest.mark.parametrize("recorded", ["sqlite"], indirect=True)  # figures do not depend on the database
@pytest.mark.parametrize(
    ("span", "bucket"),
    [(timedelta(days=1), Bucket.HOUR), (timedelta(hours=6), Bucket.HOUR), (timedelta(days=7), Bucket.DAY)],
)
def test_time_labels_never_collide(recorded: Recorded, span: timedelta, bucket: Bucket) -> None:
    # the dashboard's last 24 hours end at any minute: ends on, just after and well off the hour
    for end_minutes in (0, 7, 48, 12 * 60 + 30, 23 * 60 + 59):
        until = recorded.history.started + timedelta(days=1, minutes=end_minutes)
        window = make_window(until - span, until, bucket, recorded.clock.now())
        for kind in KINDS:
            close = time_labels_too_close(drawn(report(recorded, kind, window)))
            assert not close, f"{kind}, {span} to {until:%H:%M}: labels collide: {close}"


def test_an_empty_window_gives_empty_reports(recorded: Recorded) -> None:
    before = recorded.history.started - timedelta(days=3)
    window = make_window(before, before + timedelta(hours=5), Bucket.HOUR, recorded.clock.now())
    library = report(recorded, "library", window)
    assert len(library.rows) == 5
    assert all(r["files"] == r["mounts"] == 0 and r["efficiency"] is None for r in library.records())
    assert report(recorded, "drives", window).rows == []
    assert report(recorded, "mounts", window).rows == []


def test_estimates_need_published_costs(recorded: Recorded) -> None:
    window = odd_window(recorded)
    with recorded.factory() as session:
        plain = build_report("library", session, window, recorded.clock.now(), None)
    with_costs = report(recorded, "library", window)
    assert all(r["transfer_s"] is None and r["positioning_s"] is None for r in plain.records())
    rate = recorded.history.adapter.library_costs().rate_bytes_per_s
    for row in with_costs.records():
        assert row["transfer_s"] == pytest.approx(row["bytes"] / rate, abs=2e-3)  # type: ignore[operator]
        assert row["transfer_s"] + row["positioning_s"] == pytest.approx(row["reading_s"], abs=5e-3)  # type: ignore[operator]


def test_per_tape_totals_add_up(recorded: Recorded) -> None:
    window = odd_window(recorded, Bucket.DAY)
    tapes = report(recorded, "tapes", window).records()
    (library,) = report(recorded, "library", window).records()
    totals: dict[str, float] = defaultdict(float)
    for row in tapes:
        for name in ("files", "mounts", "bytes"):
            totals[name] += float(row[name])  # type: ignore[arg-type]
    assert totals["files"] == library["files"]
    assert totals["mounts"] == library["mounts"]
    assert totals["bytes"] == pytest.approx(float(library["bytes"]), abs=len(tapes))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 1, 1, 1, 59, 59, 999_999, tzinfo=UTC),
        datetime(2026, 1, 1, 2, 0, 0, tzinfo=UTC),
        datetime(2026, 1, 1, 1, 26, 17, 999_897, tzinfo=UTC),
        datetime(2025, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
    ],
)
def test_epoch_seconds_and_buckets_are_exact_on_both_databases(session_factory, when: datetime) -> None:
    with session_factory() as session:
        session.add(Mount(tape="T1", drive="d", mounted_at=when))
        session.flush()
        seconds, hour, day = session.execute(
            select(
                epoch_seconds(Mount.mounted_at),
                epoch_bucket(Mount.mounted_at, literal(3600, Integer())),
                epoch_bucket(Mount.mounted_at, literal(86_400, Integer())),
            )
        ).one()
        session.rollback()
    assert seconds == pytest.approx(when.timestamp(), abs=1e-6)
    assert (hour, day) == (int(when.timestamp() // 3600), int(when.timestamp() // 86_400))
