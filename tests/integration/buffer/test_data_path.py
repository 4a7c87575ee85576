"""The data path end to end, on both databases: requests through the intake, the cycle feeding the simulated
library (which writes real bytes), the bytes landing in the buffer, read over real HTTP (GET, HEAD, Range,
Want-Digest), released and evicted, asked for again and recalled again. The library is built from a
directory of real files standing for its tapes, so every byte read can be compared with its source."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.app import create_app
from carousel.config import BufferSettings, Settings
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.models import QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake import release as release_case
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from policies.registry import build_policy
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.live_server import serving
from tests.integration.scheduler.support import run_until

FILES = {  # tape -> paths on it
    "T00001": ["/data/run1/a.root", "/data/run1/b.root", "/data/run1/c.root"],
    "T00002": ["/data/run2/d.root", "/data/run2/e.root"],
}


def content(path: str) -> bytes:
    rng = random.Random(path)
    return rng.randbytes(rng.randint(20_000, 200_000))


def adler(data: bytes) -> str:
    return f"{zlib.adler32(data):08x}"


@pytest.fixture
def tapes(tmp_path: Path) -> Path:
    root = tmp_path / "tapes"
    for tape, paths in FILES.items():
        for path in paths:
            file = root / tape / path.lstrip("/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(content(path))
    return root


class Service:
    """The scheduler and the intake of one service over one database, stepped in virtual time."""

    def __init__(self, url: URL, tmp_path: Path, tapes: Path, clock: ManualClock, **library: Any) -> None:
        self.clock = clock
        self.engine = make_engine(url)
        self.factory: sessionmaker[Session] = make_session_factory(self.engine)
        self.buffer = BufferSettings(directory=tmp_path / "buffer", capacity_bytes=10 * 1024 * 1024)
        self.settings = Settings(
            database_url=url.render_as_string(hide_password=False),
            buffer=self.buffer,
            retry_backoff_s=60.0,
            max_attempts=3,
        )
        options: dict[str, Any] = {"profile": "lto8", "drives": 2, "catalogue": {"directory": str(tapes)}}
        self.adapter: SimulatedAdapter = build_simulated_adapter({**options, **library}, clock)
        self.cycle = Cycle(self.settings, self.factory, self.adapter, build_policy("fifo", None), clock)
        self.root = tmp_path / "buffer"

    def close(self) -> None:
        self.cycle.close()
        self.adapter.close()
        self.engine.dispose()

    def stage(self, paths: list[str], lifetime: object = None) -> str:
        order = StageOrder(
            paths=tuple(paths),
            api=Api.TAPE_REST,
            list_field="files",
            path_field="files[{}].path",
            lifetimes=(lifetime,) * len(paths) if lifetime is not None else (),
            lifetime_field="files[{}].diskLifetime",
        )
        with transaction(self.factory) as session:
            done = submit(
                session,
                self.adapter,
                self.clock,
                ANONYMOUS,
                order,
                max_files=100,
                max_path_bytes=4096,
                buffer=self.buffer,
            )
        return done.request_id

    def release(self, request_id: str, paths: list[str]) -> None:
        with transaction(self.factory) as session:
            release_case.release(
                session, self.clock, ANONYMOUS, request_id, paths, max_path_bytes=4096, buffer_on=True
            )

    def run_until_done(self, request_id: str) -> None:
        def done() -> bool:
            with self.factory() as session:
                return session.get(StageRequest, request_id).state != "ACTIVE"  # type: ignore[union-attr]

        run_until(self.cycle, self.clock, done, step_s=20.0, max_cycles=500)

    def file(self, path: str) -> QueuedFileRow:
        with self.factory() as session:
            row = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == path)).one()
            session.expunge(row)
            return row

    def link_states(self, request_id: str) -> list[str]:
        with self.factory() as session:
            return list(
                session.scalars(select(RequestFile.state).where(RequestFile.request_id == request_id))
            )

    def recalls(self, path: str) -> int:
        with self.factory() as session:
            return int(
                session.scalar(
                    select(func.count())
                    .select_from(Recall)
                    .join(QueuedFileRow, QueuedFileRow.id == Recall.file_id)
                    .where(QueuedFileRow.path == path, Recall.outcome == "STAGED")
                )
                or 0
            )


@pytest.fixture
def service(fresh_database_url: URL, tmp_path: Path, tapes: Path) -> Iterator[Service]:
    made = Service(fresh_database_url, tmp_path, tapes, ManualClock(T0))
    yield made
    made.close()


ALL = [path for paths in FILES.values() for path in paths]


def test_staged_files_are_in_the_buffer_byte_for_byte_with_their_checksum(service: Service) -> None:
    request_id = service.stage(ALL, lifetime="PT1H")
    service.run_until_done(request_id)
    assert set(service.link_states(request_id)) == {"COMPLETED"}
    for path in ALL:
        assert (service.root / path.lstrip("/")).read_bytes() == content(path)
        row = service.file(path)
        assert row.checksum == adler(content(path)) and row.disk_used_at is not None
    assert list(service.root.with_name("buffer.incoming").iterdir()) == []


def test_a_full_disk_and_a_corrupted_read_fail_their_attempt_and_the_file_is_staged_later(
    fresh_database_url: URL, tmp_path: Path, tapes: Path
) -> None:
    faults = {"disk_full": [{"writes": 1}], "corrupt_reads": [{"path": "/data/run2/d.root", "reads": 1}]}
    service = Service(fresh_database_url, tmp_path, tapes, ManualClock(T0), faults=faults)
    try:
        request_id = service.stage(ALL)
        service.run_until_done(request_id)
        assert set(service.link_states(request_id)) == {"COMPLETED"}
        for path in ALL:
            assert (service.root / path.lstrip("/")).read_bytes() == content(path)
        with service.factory() as session:
            reasons = list(session.scalars(select(Recall.reason).where(Recall.outcome == "FAILED")))
        assert any("no space left on device" in (r or "").lower() for r in reasons), reasons
        assert any("checksum mismatch" in (r or "") for r in reasons), reasons
    finally:
        service.close()


def test_released_files_are_evicted_and_a_new_request_recalls_them_again(service: Service) -> None:
    path = "/data/run1/a.root"
    first = service.stage([path])
    service.run_until_done(first)
    assert (service.root / path.lstrip("/")).exists()

    service.release(first, [path])
    report = service.cycle.run_once()
    assert report.buffer is not None and report.buffer.evicted == 1
    assert not (service.root / path.lstrip("/")).exists()
    row = service.file(path)
    assert row.state == "STAGED" and row.disk_used_at is None and not row.on_disk

    second = service.stage([path])
    assert service.link_states(second) == ["PENDING"]  # on tape only: recalled again
    service.run_until_done(second)
    assert (service.root / path.lstrip("/")).read_bytes() == content(path)
    assert service.recalls(path) == 2


def test_a_request_joining_a_file_on_disk_completes_at_once_and_pins_it(service: Service) -> None:
    path = "/data/run1/b.root"
    first = service.stage([path], lifetime=60)
    service.run_until_done(first)
    service.clock.advance(30)
    second = service.stage([path], lifetime="P1D")
    assert service.link_states(second) == ["COMPLETED"]
    service.clock.advance(31)  # the first pin is over; the second holds for a day
    assert service.cycle.run_once().buffer.evicted == 0  # type: ignore[union-attr]
    assert (service.root / path.lstrip("/")).exists()
    assert service.recalls(path) == 1


def test_the_bytes_over_http_with_range_head_and_digest(service: Service) -> None:
    request_id = service.stage(ALL)
    service.run_until_done(request_id)
    app = create_app(
        service.settings, adapter=service.adapter, clock=service.clock, session_factory=service.factory
    )
    path = "/data/run2/e.root"
    data = content(path)
    with serving(app) as base, httpx.Client(base_url=base) as http:
        whole = http.get(path)
        assert whole.status_code == 200 and whole.content == data
        assert "digest" not in whole.headers

        listed = http.get(f"/api/native/v1/requests/{request_id}/files").json()["files"]
        assert {f["path"]: f["checksum"] for f in listed} == {p: adler(content(p)) for p in ALL}

        part = http.get(path, headers={"Range": "bytes=100-199"})
        assert part.status_code == 206 and part.content == data[100:200]
        assert part.headers["content-range"] == f"bytes 100-199/{len(data)}"

        head = http.head(path, headers={"Want-Digest": "adler32"})
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) == len(data)
        assert head.headers["digest"] == f"adler32={adler(data)}"

        unknown = http.get("/data/never/staged.root")
        assert unknown.status_code == 404
        assert unknown.headers["content-type"] == "application/problem+json"
        assert "POST /api/v1/stage" in unknown.json()["detail"]

        wrong_method = http.get("/api/v1/stage")  # the API's route takes POST: not a file
        assert wrong_method.status_code == 405 and "POST" in wrong_method.headers["allow"]

        for attempt in ("/data/../../etc/passwd", "/data/%2e%2e/%2e%2e/etc/passwd", "/%00/x"):
            answer = http.get(attempt)
            assert answer.status_code in (400, 404), attempt
            assert answer.headers["content-type"] == "application/problem+json", attempt

        # deleted behind carousel's back: found, marked, never served as staged
        (service.root / path.lstrip("/")).unlink()
        gone = http.get(path)
        assert gone.status_code == 409 and "on tape only" in gone.json()["detail"]
        assert service.file(path).disk_used_at is None


def test_reading_a_file_makes_it_the_most_recently_used(service: Service) -> None:
    request_id = service.stage(ALL)
    service.run_until_done(request_id)
    app = create_app(
        service.settings, adapter=service.adapter, clock=service.clock, session_factory=service.factory
    )
    before = service.file("/data/run1/a.root").disk_used_at
    service.clock.advance(100)
    with serving(app) as base, httpx.Client(base_url=base) as http:
        assert http.get("/data/run1/a.root").status_code == 200
    assert service.file("/data/run1/a.root").disk_used_at == service.clock.now() != before


HALF_WRITER = """
import sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as out:
    out.write(data[: len(data) // 2])
    out.flush()
    print("half", flush=True)
    sys.stdin.read()  # until killed
"""


def test_a_write_killed_halfway_leaves_nothing_visible_and_the_file_is_staged_after_a_restart(
    fresh_database_url: URL, tmp_path: Path, tapes: Path
) -> None:
    path = "/data/run2/d.root"
    clock = ManualClock(T0)
    first = Service(fresh_database_url, tmp_path, tapes, clock)
    request_id = first.stage([path])
    first.cycle.run_once()  # handed to the library: SUBMITTED
    file_id = first.file(path).id
    assert first.file(path).state == "SUBMITTED"
    first.close()  # the scheduler process is gone; its library with it

    # a real process writing the file's bytes where the library writes them, killed halfway
    incoming = tmp_path / "buffer.incoming" / str(file_id)
    source = tapes / "T00002" / path.lstrip("/")
    with subprocess.Popen(
        [sys.executable, "-c", HALF_WRITER, str(source), str(incoming)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as writer:
        assert writer.stdout is not None and writer.stdout.readline() == b"half\n"
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert 0 < incoming.stat().st_size < len(content(path))
    assert not (tmp_path / "buffer" / "data").exists()  # nothing under the served tree

    second = Service(fresh_database_url, tmp_path, tapes, clock)  # the scheduler starts again
    try:
        report = second.cycle.run_once()
        assert report.new_term and report.swept == 1 and report.resubmitted == 1
        second.run_until_done(request_id)
        assert second.link_states(request_id) == ["COMPLETED"]
        assert (tmp_path / "buffer" / path.lstrip("/")).read_bytes() == content(path)
    finally:
        second.close()
