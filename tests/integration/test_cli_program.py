"""The real `carousel` program in a subprocess, as a script or a shell sees it: exit statuses, one-line
errors (never a traceback) and output that is not wrapped when it goes to a pipe or a file."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.clients.support import (
    ServiceNotReady,
    carousel_program,
    free_port,
    service_environment,
    start_carousel,
    stop,
    wait_ready,
    write_carousel_config,
)
from tests.integration.scheduler.support import SMALL_LIBRARY
from tests.integration.test_cli import Live, live  # noqa: F401 - the fixture: the app served on loopback

PROGRAM_TIMEOUT_S = 60.0
NOWHERE = "http://127.0.0.1:9"  # nothing listens: a command that got that far would fail differently


def carousel(
    *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_") and k != "COLUMNS"}
    result = subprocess.run(
        [carousel_program(), *args],
        input=stdin,
        capture_output=True,
        env={**environment, **(env or {})},
        timeout=PROGRAM_TIMEOUT_S,
        check=False,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def one_line_error(code: int, stderr: str) -> str:
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("carousel: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# --- no traceback -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"/star/a.root\n/star/caf\xe9.root\n", bytes(range(256)), b"\xff\xfe/\x00s\x00"],
    ids=["latin-1", "binary", "utf-16"],
)
def test_submit_from_a_file_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path, content: bytes) -> None:
    listing = tmp_path / "paths.txt"
    listing.write_bytes(content)
    code, _, err = carousel("submit", "--from-file", str(listing), "--url", NOWHERE)
    line = one_line_error(code, err)
    assert f"--from-file {listing}: not UTF-8 text" in line
    code, _, err = carousel("submit", "--from-file", "-", "--url", NOWHERE, stdin=content)
    assert "--from-file standard input: not UTF-8 text" in one_line_error(code, err)


def test_latin1_says_where_the_bad_byte_is(tmp_path: Path) -> None:
    listing = tmp_path / "paths.txt"
    listing.write_bytes(b"/star/a.root\n/star/caf\xe9.root\n")
    code, _, err = carousel("submit", "--from-file", str(listing), "--url", NOWHERE)
    assert "byte 0xe9 on line 2" in one_line_error(code, err)


def test_a_path_argument_that_is_not_utf8_is_one_line_and_exit_2() -> None:
    path = os.fsdecode(b"/star/caf\xe9.root")  # what Python makes of such bytes in argv
    code, _, err = carousel("submit", path, "--url", NOWHERE)
    assert "PATH argument 1 is not UTF-8 text" in one_line_error(code, err)


def test_option_files_that_are_not_utf8_are_one_line_and_exit_2(
    tmp_path: Path, sqlite_template: Path
) -> None:
    options = tmp_path / "options.toml"
    options.write_bytes(b"fifo = {}\n# caf\xe9\n")
    database = tmp_path / "policy.sqlite3"
    database.write_bytes(sqlite_template.read_bytes())
    env = {"CAROUSEL_DATABASE_URL": f"sqlite:///{database}"}
    code, _, err = carousel("policy", "set", "fifo", "--reason", "r", "--options-file", str(options), env=env)
    assert f"--options-file {options}: not UTF-8 text" in one_line_error(code, err)
    simulate = ("simulate", "--workload", "light_load", "--scale", "0.01", "--out", str(tmp_path / "out"))
    code, _, err = carousel(*simulate, "--policy-options", str(options))
    assert f"{options}: not UTF-8 text" in one_line_error(code, err)


def test_a_malformed_url_is_one_line_and_exit_2() -> None:
    code, _, err = carousel("status", "some-id", "--url", "http://[bad")
    assert "cannot reach carousel" in one_line_error(code, err)


# --- carousel status: what the exit status says ------------------------------------------------------------


def _submit(service: Live, *paths: str) -> str:
    code, out, err = carousel("submit", *paths, "--url", service.url)
    assert code == 0, err
    return out.strip()


def _status(service: Live, request_id: str, *options: str) -> tuple[int, str, str]:
    """The exit status, the table's title ("request <id>: <outcome>") and the whole output."""
    code, out, err = carousel("status", request_id, *options, "--url", service.url)
    assert "Traceback" not in err
    title = next(line.strip() for line in out.splitlines() if line.strip().startswith("request "))
    return code, title.removeprefix(f"request {request_id}: "), out


def test_status_exit_says_active_completed_failed_or_partly(live: Live) -> None:  # noqa: F811
    good = live.paths(3)
    all_good = _submit(live, *good[:2])
    all_failed = _submit(live, "/not/in/the/library/1", "/not/in/the/library/2")
    partly = _submit(live, good[2], "/not/in/the/library/3")

    assert _status(live, all_good)[:2] == (3, "ACTIVE")
    code, said, out = _status(live, all_failed)
    assert (code, said) == (1, "FAILED")  # it said DONE, and exited 0
    assert "FAILED /not/in/the/library/1: not in the library" in out

    live.step_until_idle()
    assert _status(live, all_good, "--watch", "--timeout", "5")[:2] == (0, "DONE")
    assert _status(live, partly)[:2] == (1, "DONE, 1 of 2 COMPLETED (1 FAILED)")


def test_status_of_a_request_cancelled_whole_says_cancelled(live: Live) -> None:  # noqa: F811
    request_id = _submit(live, *live.paths(2))
    code, _, err = carousel("cancel", request_id, "--url", live.url)
    assert code == 0, err
    assert _status(live, request_id)[:2] == (1, "CANCELLED")


# --- output into a pipe or a file is not wrapped -----------------------------------------------------------


def test_the_start_up_banner_into_a_file_keeps_each_url_whole(tmp_path: Path) -> None:
    port = free_port()
    buffer = {"enabled": True, "directory": str(tmp_path / "buffer"), "capacity_bytes": 2**30}
    config = write_carousel_config(tmp_path, port=port, library=SMALL_LIBRARY, buffer=buffer)
    env = {k: v for k, v in service_environment(config).items() if k != "COLUMNS"}
    process, log = start_carousel(tmp_path, env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(url, process, log)
        except ServiceNotReady as exc:
            pytest.fail(str(exc))
    finally:
        stop(process)
    banner = log.read_text()
    expected = f"carousel API and scheduler listening on {url} (Tape REST: {url}/api/v1, docs: {url}/docs)"
    assert len(expected) > 80
    assert expected in banner.splitlines(), banner
    database = next(line for line in banner.splitlines() if line.startswith("database: "))
    assert re.search(r"database: sqlite:///\S+carousel\.sqlite3$", database), banner
    held = "files held 24 h unless released (GET a staged file's URL to read it)"
    assert f"disk buffer: {tmp_path / 'buffer'}, 1 GiB, {held}" in banner.splitlines(), banner
