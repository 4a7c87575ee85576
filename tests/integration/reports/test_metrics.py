"""/metrics parsed with prometheus-client's own parser and checked against the database the history wrote;
registries kept apart per app; the scheduler's own metrics server."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import httpx
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.domain.states import FILE_ACTIVE, FILE_TAPE_WORK, FileState
from carousel.observability.exposition import serve_metrics
from carousel.observability.metrics import ServiceMetrics
from carousel.reports.catalog import build_report
from carousel.reports.window import Bucket, make_window
from tests.integration.reports.conftest import Recorded, app_for, client

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(text: str) -> Samples:
    """Every sample of the exposition, keyed by name and sorted labels (the parser refuses bad text)."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_agree_with_the_database(recorded: Recorded) -> None:
    with client(app_for(recorded)) as api:
        response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples = scrape(response.text)

    with recorded.factory() as session:
        queue = session.execute(
            select(QueuedFileRow.state, QueuedFileRow.grp, func.count())
            .where(QueuedFileRow.state.in_([s.value for s in FILE_ACTIVE]))
            .group_by(QueuedFileRow.state, QueuedFileRow.grp)
        ).all()
        outcomes = Counter(session.scalars(select(Recall.outcome)).all())
        recalls = session.scalar(select(func.count()).select_from(Recall))
        mounts = session.scalar(select(func.count()).select_from(Mount))
        staged_bytes = session.scalar(select(func.sum(Recall.bytes)).where(Recall.outcome == "STAGED"))
        failed_files = session.scalar(
            select(func.count()).where(QueuedFileRow.state == FileState.FAILED.value)
        )
        tapes = session.scalar(
            select(func.count(func.distinct(QueuedFileRow.tape))).where(
                QueuedFileRow.state.in_([s.value for s in FILE_TAPE_WORK])
            )
        )
    assert queue, "the history ends with work in the queue"
    shown = {
        (dict(labels)["state"], dict(labels)["group"]): v
        for (name, labels), v in samples.items()
        if name == "carousel_queue_files"
    }
    assert shown == {(state, group): float(n) for state, group, n in queue}
    assert value(samples, "carousel_tapes_with_work") == tapes
    assert value(samples, "carousel_database_up") == 1

    assert value(samples, "carousel_mounts_total") == mounts > 0
    assert value(samples, "carousel_bytes_read_total") == staged_bytes
    assert value(samples, "carousel_completions_total", outcome="staged") == outcomes["STAGED"] > 0
    assert value(samples, "carousel_completions_total", outcome="failed") == failed_files
    assert value(samples, "carousel_read_failures_total") == outcomes["FAILED"] > 0
    assert value(samples, "carousel_files_handed_over_total") == recalls
    cycles = len(recorded.history.reports)
    assert value(samples, "carousel_cycles_total", leader="true") == cycles
    assert value(samples, "carousel_cycle_duration_seconds_count") == cycles
    assert value(samples, "carousel_hsm_health", state="ONLINE") == 1
    assert value(samples, "carousel_hsm_health", state="OFFLINE") == 0

    now = recorded.clock.now()
    with recorded.factory() as session:
        hour = build_report(
            "library", session, make_window(now - timedelta(hours=1), now, Bucket.HOUR, now), now
        )
    reading = sum(float(r["reading_s"]) for r in hour.records())  # type: ignore[arg-type]
    mounted = sum(float(r["mounted_s"]) for r in hour.records())  # type: ignore[arg-type]
    assert value(samples, "carousel_library_efficiency_ratio") == pytest.approx(reading / mounted, abs=1e-4)
    per_drive = [v for (name, _), v in samples.items() if name == "carousel_drive_efficiency_ratio"]
    assert len(per_drive) == 3 and all(0 < v <= 1 for v in per_drive)


def test_submissions_and_http_requests_are_counted(recorded: Recorded) -> None:
    paths = list(recorded.history.adapter.library.catalogue)[:3]
    with client(app_for(recorded, shared_metrics=False)) as api:
        before = scrape(api.get("/metrics").text)
        created = api.post("/api/native/v1/requests", json={"paths": paths})
        assert created.status_code == 201, created.text
        refused = api.post("/api/native/v1/requests", json={"paths": ["relative/path"]})
        assert refused.status_code == 400
        after = scrape(api.get("/metrics").text)
    assert value(before, "carousel_submissions_total", api="native") == 0
    assert value(after, "carousel_submissions_total", api="native") == 1  # the refused one is not counted
    assert value(after, "carousel_submitted_files_total", api="native") == 3
    route = {"method": "POST", "route": "/api/native/v1/requests"}
    assert value(after, "carousel_http_requests_total", status="201", **route) == 1
    assert value(after, "carousel_http_requests_total", status="400", **route) == 1
    assert value(after, "carousel_http_requests_total", method="GET", route="/metrics", status="200") == 1
    assert value(after, "carousel_http_request_duration_seconds_count", **route) == 2


def test_each_app_keeps_its_own_registry(recorded: Recorded) -> None:
    first, second = app_for(recorded, shared_metrics=False), app_for(recorded, shared_metrics=False)
    with client(first) as one, client(second) as two:
        for _ in range(3):
            one.get("/healthz")
        two.get("/healthz")
        counted = [
            value(
                scrape(api.get("/metrics").text),
                "carousel_http_requests_total",
                method="GET",
                route="/healthz",
                status="200",
            )
            for api in (one, two)
        ]
    assert counted == [3, 1]


def test_unmatched_paths_share_one_label(recorded: Recorded) -> None:
    with client(app_for(recorded, shared_metrics=False)) as api:
        for n in range(5):
            assert api.get(f"/no/such/{n}").status_code == 404
        samples = scrape(api.get("/metrics").text)
    assert value(samples, "carousel_http_requests_total", method="GET", route="unmatched", status="404") == 5
    assert not [k for k in samples if "/no/such" in str(k)]


def test_the_scheduler_serves_its_metrics_on_a_port_of_its_own(recorded: Recorded) -> None:
    metrics = ServiceMetrics()
    metrics.watch_database(recorded.factory, recorded.clock)
    assert metrics.cycle is not None
    metrics.cycle.mounts.inc(7)
    port, stop = serve_metrics(metrics, "127.0.0.1", 0)
    try:
        response = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
    finally:
        stop()
    samples = scrape(response.text)
    assert value(samples, "carousel_mounts_total") == 7
    assert value(samples, "carousel_database_up") == 1
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_each_librarys_counters_are_there_at_0_before_its_first_count() -> None:
    """A series that first appears at its first count hides that count from Prometheus' rate and increase."""
    metrics = ServiceMetrics(libraries=("east", "west"))
    samples = scrape(generate_latest(metrics.registry).decode())
    for library in ("east", "west"):
        wanted = [
            ("carousel_library_mounts_total", {"library": library}),
            ("carousel_library_files_handed_over_total", {"library": library}),
            ("carousel_library_bytes_read_total", {"library": library}),
            *(
                ("carousel_library_completions_total", {"library": library, "outcome": outcome})
                for outcome in ("staged", "failed", "cancelled")
            ),
        ]
        for name, labels in wanted:
            assert samples.get((name, tuple(sorted(labels.items())))) == 0, (name, labels)
