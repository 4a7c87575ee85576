"""The XRootD prepare program against the real service (its app on PostgreSQL and SQLite, the simulated
library in virtual time), called as XRootD's Generic Prepare Interface calls it. The program's HTTP client
reaches the app in-process through a transport that hands each request to the ASGI app."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import RequestAlias, StageRequest
from carousel.domain.clock import ManualClock
from carousel.xrootd.program import EXIT_DONE, EXIT_FAILED, run
from carousel.xrootd.settings import CONFIG_FILE_ENV
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import BASE_URL, SyncApi
from tests.integration.scheduler.support import make_cycle, run_until

REQID = "52667f000001:277289e9.6b025b1b:1"
MISSING = "/no/such/file.root"


class AppTransport(httpx.BaseTransport):
    """The program's synchronous client, served by the app through the test's blocking portal."""

    def __init__(self, api: SyncApi) -> None:
        self._api = api

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self._api.request(
            request.method, str(request.url), content=request.read(), headers=request.headers
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@dataclass
class Outcome:
    status: int
    out: str
    err: str

    def lines(self) -> list[list[str]]:
        return [line.split("\t") for line in self.out.splitlines()]


@dataclass
class Program:
    api: SyncApi
    clock: ManualClock

    def __call__(self, *argv: str, env: dict[str, str] | None = None) -> Outcome:
        out, err = io.StringIO(), io.StringIO()
        status = run(
            list(argv),
            env or {},
            out,
            err,
            transport=AppTransport(self.api),
            monotonic=lambda: self.clock.now().timestamp(),
            sleep=self.clock.advance,
        )
        return Outcome(status, out.getvalue(), err.getvalue())


@pytest.fixture
def program(api: SyncApi, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Program:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)
    config = tmp_path / "xrootd.toml"
    config.write_text(f'url = "{BASE_URL}"\ncancel_grace_s = 2\nactivity = "xrootd"\n')
    monkeypatch.setenv(CONFIG_FILE_ENV, str(config))
    return Program(api, clock)


def _request_of(session_factory: sessionmaker[Session], alias: str) -> StageRequest:
    with session_factory() as session:
        request = session.scalars(
            select(StageRequest)
            .join(RequestAlias, RequestAlias.request_id == StageRequest.id)
            .where(RequestAlias.alias == alias)
        ).one()
        session.expunge(request)
        return request


def test_stage_queues_one_request_under_xrootds_id_with_priority_and_colocation(
    program: Program, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    paths = library_paths[:3]
    env = {"XRDPREP_TID": "root.1:2@[::1]", "XRDPREP_COLOC": paths[0]}
    done = program("-C", "-p", "3", "--", REQID, "stage", *paths, MISSING, env=env)
    assert done.status == EXIT_DONE, done.err
    request = _request_of(session_factory, REQID)
    assert (request.files_total, request.priority, request.colocation) == (4, 3, paths[0])
    assert request.activity == "xrootd"
    assert f"stage {REQID} (root.1:2@[::1]): 4 file(s) queued as carousel request {request.id}" in done.err

    query = program("--", REQID, "query")
    assert query.status == EXIT_DONE
    head, outlook, *files = query.lines()
    assert head[:5] == ["REQUEST", REQID, "ACTIVE", f"id={request.id}", "files=4"]
    assert "FAILED=1" in head and "SUBMITTED=3" in head
    # an active request says where it stands: next in line, an eta, nothing holding its files back
    assert outlook[:2] == ["OUTLOOK", "position=0"] and outlook[3:] == ["rough=no", "waiting=-"]
    assert outlook[2].startswith("eta=20")
    assert files == [*(["SUBMITTED", p] for p in paths), ["FAILED", MISSING, "not in the library"]]


def test_prep_has_no_request_id_and_queues_all_the_same(
    program: Program, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    done = program("-p", "0", "--", "*", "prep", library_paths[0])
    assert done.status == EXIT_DONE, done.err
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(StageRequest)) == 1
        assert session.scalar(select(func.count()).select_from(RequestAlias)) == 0


def test_query_follows_the_recall_to_completed_and_evict_releases(
    program: Program,
    library: SimulatedAdapter,
    library_paths: list[str],
    clock: ManualClock,
    session_factory: sessionmaker[Session],
) -> None:
    paths = library_paths[:2]
    assert program("-p", "0", "--", REQID, "stage", *paths).status == EXIT_DONE
    run_until(
        make_cycle(session_factory, library, clock),
        clock,
        lambda: _request_of(session_factory, REQID).state == "DONE",
    )
    assert program("--", REQID, "query").lines()[1:] == [["COMPLETED", p] for p in paths]

    evicted = program("--", "*", "evict", paths[0])
    assert evicted.status == EXIT_DONE, evicted.err
    asked = program("--", REQID, "query", paths[0], "/not/asked/for")
    assert asked.lines()[1:] == [
        ["COMPLETED", paths[0], "not on disk (released)"],
        ["UNKNOWN", "/not/asked/for", "not in this request"],
    ]


def test_cancel_all_or_some_and_refused_paths(program: Program, library_paths: list[str]) -> None:
    paths = library_paths[:3]
    assert program("-p", "0", "--", REQID, "stage", *paths).status == EXIT_DONE
    some = program("--", REQID, "cancel", paths[0])
    assert some.status == EXIT_DONE and "cancelled 1 file(s)" in some.err
    refused = program("--", REQID, "cancel", "/elsewhere")
    assert refused.status == EXIT_FAILED
    assert "carousel answered 400: paths: 1 path(s) are not in request" in refused.err
    rest = program("--", REQID, "cancel")
    assert rest.status == EXIT_DONE and "cancelled every file" in rest.err
    assert [line[0] for line in program("--", REQID, "query").lines()[1:]] == ["CANCELLED"] * 3


def test_a_cancel_that_overtakes_its_stage_waits_for_it(
    program: Program, library_paths: list[str], clock: ManualClock
) -> None:
    """XRootD runs prepare programs side by side: the stage lands while the cancel waits (virtual time)."""
    staged: list[Outcome] = []

    def stage_lands_meanwhile(seconds: float) -> None:
        clock.advance(seconds)
        if not staged:
            staged.append(program("-p", "0", "--", REQID, "stage", library_paths[0]))

    out, err = io.StringIO(), io.StringIO()
    status = run(
        ["--", REQID, "cancel"],
        {},
        out,
        err,
        transport=AppTransport(program.api),
        monotonic=lambda: clock.now().timestamp(),
        sleep=stage_lands_meanwhile,
    )
    assert staged[0].status == EXIT_DONE
    assert status == EXIT_DONE, err.getvalue()
    assert program("--", REQID, "query").lines()[1] == ["CANCELLED", library_paths[0]]


def test_unknown_request_ids(program: Program, clock: ManualClock) -> None:
    started = clock.now()
    cancel = program("--", "no-such-id", "cancel")
    assert cancel.status == EXIT_FAILED
    assert "carousel answered 404: no request 'no-such-id'" in cancel.err
    assert (
        clock.now() - started
    ).total_seconds() >= 2.0  # the grace for a stage still on its way, then no more
    query = program("--", "no-such-id", "query")
    assert query.status == EXIT_DONE
    assert query.out == "ERROR\tunknown request id no-such-id: carousel has no request by it\n"


def test_refusals_of_the_service_are_logged(
    program: Program, library_paths: list[str], make_api: Callable[..., SyncApi], clock: ManualClock
) -> None:
    assert program("-p", "0", "--", REQID, "stage", library_paths[0]).status == EXIT_DONE
    again = program("-p", "0", "--", REQID, "stage", library_paths[1])
    assert again.status == EXIT_FAILED
    assert f"carousel answered 409: alias '{REQID}' already names a request" in again.err
    closed = Program(make_api(anonymous=False), clock)
    refused = closed("--", REQID, "query")
    assert refused.status == EXIT_FAILED
    assert refused.out.startswith("ERROR\tcarousel answered 401: anonymous calls are turned off")
