"""The program's failures, without a carousel service: bad calls, bad settings, a service that is not there
or is something else. Each is one line on standard error; a query also says it on standard output."""

from __future__ import annotations

import io
import os
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from carousel.xrootd.program import EXIT_DONE, EXIT_FAILED, EXIT_UNUSABLE, run
from carousel.xrootd.settings import CONFIG_FILE_ENV

REQID = "52667f000001:277289e9.6b025b1b:1"
LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ carousel-xrootd-prepare\[\d+\]( \w+ \S+ \(.*\))?: .+\n$"
)


@pytest.fixture(autouse=True)
def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CAROUSEL_"):
            monkeypatch.delenv(name)
    config = tmp_path / "xrootd.toml"
    config.write_text("timeout_s = 5\ncancel_grace_s = 0\n")
    monkeypatch.setenv(CONFIG_FILE_ENV, str(config))


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port bound but not listening: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


class _NotCarousel(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body>Not Found</body></html>")

    def do_POST(self) -> None:
        self.do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def other_server() -> Iterator[str]:
    """A web server that is not carousel (a url pointing at the wrong service)."""
    server = HTTPServer(("127.0.0.1", 0), _NotCarousel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def _run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run(list(argv), env or {}, out, err)
    return status, out.getvalue(), err.getvalue()


def test_a_call_xrootd_never_makes_is_one_line_and_status_2() -> None:
    status, out, err = _run("--", REQID, "stage")
    assert status == EXIT_UNUSABLE
    assert out == ""
    assert LOG_LINE.match(err) and "stage needs at least one path" in err


@pytest.mark.parametrize("operation", ["stage", "prep", "cancel", "evict"])
def test_an_unreachable_service_fails_the_run(
    monkeypatch: pytest.MonkeyPatch, closed_port: int, operation: str
) -> None:
    monkeypatch.setenv("CAROUSEL_XROOTD_URL", f"http://127.0.0.1:{closed_port}")
    status, out, err = _run("-p", "1", "--", REQID, operation, "/star/a.root", env={"XRDPREP_TID": "u.1:2@h"})
    assert status == EXIT_FAILED
    assert out == ""
    assert LOG_LINE.match(err), err
    assert f"{operation} {REQID} (u.1:2@h): carousel at http://127.0.0.1:{closed_port} is unreachable" in err
    assert "Traceback" not in err


def test_a_query_says_the_service_is_unreachable(monkeypatch: pytest.MonkeyPatch, closed_port: int) -> None:
    monkeypatch.setenv("CAROUSEL_XROOTD_URL", f"http://127.0.0.1:{closed_port}")
    status, out, err = _run("--", REQID, "query")
    assert status == EXIT_FAILED
    assert out.startswith(f"ERROR\tcarousel at http://127.0.0.1:{closed_port} is unreachable: ")
    assert out.count("\n") == 1
    assert LOG_LINE.match(err)


def test_a_query_says_the_program_is_misconfigured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAROUSEL_XROOTD_TIMEOUT_S", "soon")
    status, out, err = _run("--", REQID, "query")
    assert status == EXIT_UNUSABLE
    assert out.startswith("ERROR\tcarousel-xrootd-prepare is misconfigured: setting timeout_s (")
    assert "CAROUSEL_XROOTD_TIMEOUT_S" in out
    assert LOG_LINE.match(err)


def test_a_query_without_a_request_id_needs_no_service() -> None:
    status, out, _ = _run("--", "*", "query", "/star/a.root")
    assert status == EXIT_DONE
    assert out == "ERROR\tquery prepare needs the request id that prepare -s printed\n"


def test_a_cancel_without_a_request_id_is_refused() -> None:
    status, _, err = _run("--", "*", "cancel")
    assert status == EXIT_UNUSABLE
    assert "cancel needs the request id" in err


def test_a_server_that_is_not_carousel_is_not_taken_for_an_unknown_id(
    monkeypatch: pytest.MonkeyPatch, other_server: str
) -> None:
    monkeypatch.setenv("CAROUSEL_XROOTD_URL", other_server)
    status, out, _ = _run("--", REQID, "query")
    assert status == EXIT_FAILED
    assert out == "ERROR\tcarousel answered 404: <html><body>Not Found</body></html>\n"
    status, _, err = _run("--", REQID, "stage", "/a")
    assert status == EXIT_FAILED
    assert "carousel answered 404" in err
