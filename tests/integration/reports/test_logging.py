"""Structured logs: JSON lines carrying the request id of the HTTP request (also inside routes run in the
thread pool, and echoed in X-Request-ID) and the cycle id of the scheduling cycle that wrote them."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from carousel.logging import configure_logging
from carousel.observability.cycles import observed
from carousel.observability.metrics import ServiceMetrics
from tests.integration.reports.conftest import Recorded, app_for, client
from tests.integration.reports.history import make_history

Records = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def json_logs() -> Iterator[Records]:
    """configure_logging("json") for one test, writing to a buffer; the logging set-up the test found is
    put back afterwards."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    uvicorn = {
        name: (list(logging.getLogger(name).handlers), logging.getLogger(name).propagate)
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access")
    }
    quiet = {name: logging.getLogger(name).level for name in ("alembic", "apscheduler")}
    stream = io.StringIO()
    configure_logging("json", "DEBUG", stream)

    def records() -> list[dict[str, Any]]:
        return [json.loads(line) for line in stream.getvalue().splitlines()]

    yield records
    structlog.reset_defaults()
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, (handlers, propagate) in uvicorn.items():
        logging.getLogger(name).handlers[:] = handlers
        logging.getLogger(name).propagate = propagate
    for name, level in quiet.items():
        logging.getLogger(name).setLevel(level)


def test_a_request_id_is_kept_or_made_and_bound_to_the_logs(recorded: Recorded, json_logs: Records) -> None:
    app = app_for(recorded, shared_metrics=False)
    probe = logging.getLogger("tests.probe")

    @app.get("/probe")
    def _probe() -> dict[str, str]:  # a plain def: FastAPI runs it in its thread pool
        probe.warning("inside the route")
        return {"ok": "yes"}

    with client(app) as api:
        kept = api.get("/probe", headers={"X-Request-ID": "job-42.attempt:1"})
        replaced = api.get("/probe", headers={"X-Request-ID": "bad id with spaces"})
        made = api.get("/api/reports/nope")
        api.get("/healthz")
    assert kept.headers["x-request-id"] == "job-42.attempt:1"
    assert replaced.headers["x-request-id"] not in ("", "bad id with spaces")
    assert len(made.headers["x-request-id"]) == 32 and made.status_code == 404
    assert made.headers["content-type"].startswith("application/problem+json")

    records = json_logs()
    inside = [r for r in records if r["event"] == "inside the route"]
    assert [r["request_id"] for r in inside] == ["job-42.attempt:1", replaced.headers["x-request-id"]]
    assert inside[0]["level"] == "warning" and inside[0]["logger"] == "tests.probe"
    access = [r for r in records if r["event"] == "http request"]
    assert [(r["request_id"], r["route"], r["status"], r["level"]) for r in access[:3]] == [
        ("job-42.attempt:1", "/probe", 200, "info"),
        (replaced.headers["x-request-id"], "/probe", 200, "info"),
        (made.headers["x-request-id"], "/api/reports/{kind}", 404, "info"),
    ]
    assert (access[3]["route"], access[3]["level"]) == ("/healthz", "debug")  # probes: below INFO
    assert all(r["timestamp"].endswith("Z") for r in access)


def test_each_cycle_logs_with_an_id_of_its_own(session_factory, clock, json_logs: Records) -> None:
    metrics = ServiceMetrics()
    history = make_history(
        session_factory, clock, waves=2, runner=lambda cycle: observed(cycle.run_once, metrics)
    )
    history.adapter.close()
    retried = sum(r.events.retried for r in history.reports if r.events is not None)
    assert retried > 0, "the history's read errors are what the cycle logs from inside"
    records = json_logs()
    summaries = [r for r in records if r["event"] == "cycle"]
    assert summaries and all(r["logger"] == "carousel.observability.cycles" for r in summaries)
    ids = [r["cycle_id"] for r in summaries]
    assert len(set(ids)) == len(ids), "every cycle has an id of its own"
    # what the cycle's own code logs (completion, here: read errors retried) carries the cycle's id
    inner = [r for r in records if r["event"] == "read failed, retrying later"]
    assert inner and all(r["cycle_id"] for r in inner)
    assert {r["cycle_id"] for r in inner} <= set(ids)  # each the id of a cycle that logged its summary


def test_console_logs_into_a_file_keep_long_lines_whole(json_logs: Records) -> None:
    # json_logs puts the logging set-up back afterwards; the console format replaces it for this test.
    stream = io.StringIO()  # not a terminal, as a log file or a pipe
    configure_logging("console", "INFO", stream)
    url = "http://carousel.example.org:8000/api/v1/stage/" + "0123456789abcdef" * 6
    try:
        raise ConnectionError(f"cannot reach {url}")
    except ConnectionError:
        logging.getLogger("tests.probe").exception("webhook delivery to %s failed", url)
    lines = stream.getvalue().splitlines()
    assert sum(url in line for line in lines) == 2, stream.getvalue()  # the message and the exception's
    assert lines[-1] == f"ConnectionError: cannot reach {url}"
