"""Issue 16, item 9: the XRootD prepare program (the installed console script, run as XRootD's GPI runs it,
against the service over real HTTP). A line break in a request id went raw into xrootd's log (log forging);
a request id over 256 characters or with a tab was queued without its name (never to be queried or
cancelled); a path that is not UTF-8 ended in "unexpected failure". Each is refused with one clear line,
and nothing is queued."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.security.conftest import Service, ServiceFactory

PROGRAM = Path(sys.executable).with_name("carousel-xrootd-prepare")
REQID = "52667f000001:277289e9.6b025b1b:1"
EXIT_UNUSABLE = 2


def _run(
    service: Service, *argv: str | bytes, tid: str = "user.1:2@host"
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAROUSEL_")}
    env |= {
        "CAROUSEL_XROOTD_URL": service.url,
        "CAROUSEL_XROOTD_TOKEN": service.alice_token,
        "CAROUSEL_XROOTD_CONFIG": os.devnull,  # an empty file: no /etc/carousel/xrootd.toml
        "XRDPREP_TID": tid,
    }
    return subprocess.run([PROGRAM, *argv], env=env, capture_output=True, timeout=60, check=False)


def _queued(service: Service) -> list[str]:
    with service.client(service.alice_token) as client:
        return [r["id"] for r in client.get("/api/native/v1/requests").json()["requests"]]


@pytest.mark.parametrize("fresh_database_url", ["sqlite"], indirect=True)  # the database plays no part
def test_bad_request_ids_and_paths_are_refused_in_one_line(start_service: ServiceFactory) -> None:
    service = start_service()
    path = service.library_paths[0]
    refused = {
        "line break in the id": _run(
            service, "--", "abc\n2026-01-01T00:00:00Z forged: all good", "stage", path
        ),
        "id over 256 characters": _run(service, "--", "a" * 257, "stage", path),
        "tab in the id": _run(service, "--", "abc\tdef", "stage", path),
        "path not UTF-8": _run(service, "--", REQID, "stage", b"/star/\xff\xfe.root"),
        "line break in the client": _run(service, "--", REQID, "query", tid="u\nforged line"),
    }
    for why, done in refused.items():
        lines = done.stderr.decode("utf-8", "replace").splitlines()
        assert len(lines) == 1, (why, lines)
        assert "forged" not in lines[0] or "\\n" in lines[0], (why, lines)
        assert "unexpected failure" not in lines[0], (why, lines)
        if why != "line break in the client":
            assert done.returncode == EXIT_UNUSABLE, (why, done.returncode, lines)
            assert "refused, nothing queued" in lines[0], (why, lines)
    assert "not valid UTF-8" in refused["path not UTF-8"].stderr.decode()
    assert _queued(service) == []


@pytest.mark.parametrize("fresh_database_url", ["sqlite"], indirect=True)
def test_a_refused_path_is_logged_on_one_line_and_a_good_call_still_works(
    start_service: ServiceFactory,
) -> None:
    service = start_service()
    done = _run(service, "--", REQID, "stage", "/star/x\nforged: staged")  # the service refuses the path
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1 and len(lines) == 1, lines
    assert "400" in lines[0]
    staged = _run(service, "--", REQID, "stage", service.library_paths[0])  # and a good call still works
    assert staged.returncode == 0, staged.stderr
    assert len(_queued(service)) == 1
