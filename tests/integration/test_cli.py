"""The command line against a live service: the real app served by uvicorn on loopback, a real SQLite
database, the simulated library on a manual clock, and the cycle stepped by the test."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from sqlalchemy import Engine
from typer.testing import CliRunner

from carousel.api.app import create_app
from carousel.cli.app import app
from carousel.config import Settings
from carousel.db.engine import current_revision, head_revision, make_engine, make_session_factory
from carousel.domain.clock import ManualClock
from carousel.scheduler.cycle import Cycle
from hsm_adapters.simulated.adapter import SimulatedAdapter, build_simulated_adapter
from policies.registry import build_policy
from tests.integration.scheduler.support import SMALL_LIBRARY

runner = CliRunner()


@dataclass
class Live:
    url: str
    adapter: SimulatedAdapter
    cycle: Cycle
    clock: ManualClock

    def paths(self, n: int) -> list[str]:
        return list(self.adapter.library.catalogue)[:n]

    def step_until_idle(self, cycles: int = 300) -> None:
        for _ in range(cycles):
            report = self.cycle.run_once()
            if report.tapes_with_work == 0 and report.in_flight == 0:
                return
            self.clock.advance(30)
        raise AssertionError(f"the queue is not empty after {cycles} cycles")


@pytest.fixture
def live(tmp_path: Path, sqlite_template: Path, clock: ManualClock) -> Iterator[Live]:
    database = tmp_path / "cli.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    settings = Settings(database_url=f"sqlite:///{database}")
    engine: Engine = make_engine(settings)
    factory = make_session_factory(engine)
    adapter = build_simulated_adapter(SMALL_LIBRARY, clock)
    api = create_app(settings, adapter=adapter, clock=clock, session_factory=factory)
    # The socket listens before the server thread starts, so the first call queues instead of failing.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(api, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    cycle = Cycle(settings, factory, adapter, build_policy("fifo"), clock)
    try:
        yield Live(f"http://127.0.0.1:{sock.getsockname()[1]}", adapter, cycle, clock)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        adapter.close()
        engine.dispose()


def cli(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env, input=stdin)
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, stderr: str) -> str:
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("carousel: ")
    return lines[0]


def test_submit_status_watch_and_a_failed_path(live: Live):
    paths = live.paths(3)
    code, out, err = cli("submit", *paths, "/not/in/the/library", "--priority", "5", "--url", live.url)
    assert code == 0, err
    request_id = out.strip()
    assert len(request_id) == 36 and "4 files requested" in err

    code, out, _ = cli("status", request_id, "--url", live.url)
    assert code == 3  # still active
    assert "ACTIVE" in out
    assert "FAILED /not/in/the/library: not in the library" in out

    live.step_until_idle()
    code, out, err = cli("status", request_id, "--watch", "--timeout", "5", "--url", live.url)
    assert code == 1, err  # done, and not every file completed
    assert "DONE, 3 of 4 COMPLETED (1 FAILED)" in out
    assert "4/4" in err  # the progress bar, full
    assert "COMPLETED=3" in err and "FAILED=1" in err


def test_submit_from_a_file_and_from_stdin(live: Live, tmp_path: Path):
    paths = live.paths(4)
    listing = tmp_path / "paths.txt"
    listing.write_text("# wanted for run 7\n" + "\n".join(paths[:2]) + "\n\n")
    code, _, err = cli("submit", "--from-file", str(listing), paths[2], "--url", live.url)
    assert code == 0, err
    assert "3 files requested" in err
    code, _, err = cli("submit", "--from-file", "-", "--url", live.url, stdin=paths[3] + "\n")
    assert code == 0, err
    assert "1 file requested" in err


def test_cancel_then_status(live: Live):
    code, out, _ = cli("submit", *live.paths(2), "--url", live.url)
    request_id = out.strip()
    code, out, err = cli("cancel", request_id, "--url", live.url)
    assert code == 0, err
    assert "CANCELLED" in out
    live.step_until_idle(cycles=3)
    code, out, _ = cli("status", request_id, "--url", live.url)
    assert code == 1  # done, nothing completed
    header, _, counts = out.strip().splitlines()[-3:]
    assert header.split("┃")[-1].strip() == "CANCELLED"
    assert [n for n in counts.split() if n.isdigit()] == ["0", "0", "0", "0", "2"]


def test_watch_gives_up_at_its_timeout(live: Live):
    _, out, _ = cli("submit", *live.paths(1), "--url", live.url)
    code, _, err = cli(
        "status", out.strip(), "--watch", "--timeout", "0.2", "--interval", "0.05", "--url", live.url
    )
    assert code == 2
    *progress, last = err.strip().splitlines()
    assert progress and "0/1" in progress[-1]
    assert last.startswith("carousel: ") and "still active after 0.2 s" in last


def test_unknown_request_is_one_line_and_exit_2(live: Live):
    code, _, err = cli("status", "no-such-request", "--url", live.url)
    line = one_line_error(code, err)
    assert "no-such-request" in line and "HTTP 404" in line
    code, _, err = cli("cancel", "no-such-request", "--url", live.url)
    assert "HTTP 404" in one_line_error(code, err)


def test_unreachable_service_is_one_line_and_exit_2():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    code, _, err = cli("status", "abc", "--url", f"http://127.0.0.1:{port}")
    assert "cannot reach carousel" in one_line_error(code, err)


def test_bad_options_are_one_line_and_exit_2(tmp_path: Path):
    assert "No such option: --bogus" in one_line_error(*cli("submit", "--bogus")[::2])
    assert "no paths" in one_line_error(*cli("submit", "--url", "http://127.0.0.1:9")[::2])
    missing = tmp_path / "absent.txt"
    assert "absent.txt" in one_line_error(*cli("submit", "--from-file", str(missing))[::2])
    assert "Missing argument 'ID'" in one_line_error(*cli("status")[::2])


def test_a_broken_setting_is_one_line_and_exit_2():
    code, _, err = cli("library", "files", env={"CAROUSEL_ADAPTER": "tapeless"})
    assert "unknown adapter 'tapeless'" in one_line_error(code, err)


def test_library_files_lists_paths_to_stage():
    env = {"CAROUSEL_ADAPTER_OPTIONS": '{"catalogue": {"generate": {"seed": 5, "cartridges": 3}}}'}
    code, out, err = cli("library", "files", "--limit", "4", env=env)
    assert code == 0, err
    listed = out.split()
    assert len(listed) == 4 and all(p.startswith("/") for p in listed)
    adapter = build_simulated_adapter(
        {"catalogue": {"generate": {"seed": 5, "cartridges": 3}}}, ManualClock()
    )
    assert set(listed) <= set(adapter.library.catalogue)
    tape = adapter.library.catalogue.tapes[1]
    code, out, _ = cli("library", "files", "--tape", tape, "--long", "--limit", "2", env=env)
    assert [line.split("\t")[2] for line in out.splitlines()] == [tape, tape]


def test_db_upgrade_migrates_the_configured_database(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'new.sqlite3'}"
    code, out, err = cli("db", "upgrade", env={"CAROUSEL_DATABASE_URL": url})
    assert code == 0, err
    assert head_revision() in out
    engine = make_engine(url)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def test_no_command_shows_help():
    code, out, _ = cli()
    assert code == 0
    assert "submit" in out and "serve" in out
    assert "study" in out  # added by the studies, a command plug-in


def test_serve_refuses_an_old_schema(tmp_path: Path):
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    code, _, err = cli("serve", "--port", "0", env=env)
    assert "run `carousel db upgrade`" in one_line_error(code, err)


def test_serve_on_a_taken_port_says_so(tmp_path: Path, sqlite_template: Path):
    database = tmp_path / "serve.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli(
            "serve", "--port", str(port), env={"CAROUSEL_DATABASE_URL": f"sqlite:///{database}"}
        )
    assert f"cannot listen on 127.0.0.1:{port}" in one_line_error(code, err)
    assert "listening" not in out  # nothing announced


def test_serve_refuses_several_workers(tmp_path: Path, sqlite_template: Path):
    """The scheduler runs in one process: several API workers are `carousel api --workers N`."""
    database = tmp_path / "serve.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}", "CAROUSEL_API_WORKERS": "2"}
    code, out, err = cli("serve", "--port", "0", env=env)
    assert "run `carousel api --workers 2` and `carousel scheduler`" in one_line_error(code, err)
    assert "listening" not in out


def test_api_workers_out_of_range_is_a_usage_error():
    code, _, err = cli("api", "--workers", "0")
    assert code == 2 and "--workers" in err


def test_scheduler_once_runs_one_cycle(tmp_path: Path, sqlite_template: Path):
    database = tmp_path / "once.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    code, out, err = cli("scheduler", "--once", env={"CAROUSEL_DATABASE_URL": f"sqlite:///{database}"})
    assert code == 0, err
    assert "health ONLINE" in out and "claimed 0" in out
    # the start-up banner says what the library is: the embedded default, small enough to stage whole
    library = "library: simulated lto8 library (LTO-8 full height, 12 TB cartridges, 360 MB/s native): "
    assert f"{library}4 drives, 20 tapes, 200 files, 1.26 GB; clock 100x the wall clock" in out


def test_status_shows_position_eta_and_reasons_while_active(live: Live):
    _, out, _ = cli("submit", *live.paths(2), "--url", live.url)
    request_id = out.strip()

    code, out, err = cli("status", request_id, "--url", live.url)
    assert code == 3, err  # still active
    assert "position: next" in out
    eta = next(line for line in out.splitlines() if line.startswith("eta: "))
    assert eta.removeprefix("eta: ").startswith(live.clock.now().strftime("%Y-%m-%d"))
    assert "files: 0 with the library, 2 in the next cycle, 0 not in the estimate" in out

    live.step_until_idle()
    code, out, _ = cli("status", request_id, "--url", live.url)
    assert code == 0 and "DONE" in out
    assert "position" not in out and "eta" not in out
