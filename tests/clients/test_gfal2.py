"""Debian's gfal2 clients against the real service: `carousel serve` in a subprocess on 127.0.0.1, a SQLite
file, and the simulated library a thousand times faster than real time, so recalls finish in a second.

The gfal-* tools exit 0 even when files failed: the tests read what they print (READY, QUEUED, FAILED).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.clients.support import (
    ServiceNotReady,
    free_port,
    service_environment,
    start_carousel,
    stop,
    wait_ready,
    write_carousel_config,
)

pytestmark = [pytest.mark.clients, pytest.mark.xdist_group("gfal2")]

SYSTEM_PYTHON = "/usr/bin/python3"  # python3-gfal2 lives there, not in the virtual environment
CLIENT_TIMEOUT_S = 120.0
MISSING = "/no/such/file.root"
LIBRARY = {
    "profile": "lto8",
    "drives": 4,
    "catalogue": {"generate": {"seed": 11, "cartridges": 6, "files_per_cartridge": 20}},
    "scale": 1000.0,
}
HUNG_PATHS = 2  # read until cancelled: what the abort scenario aborts, still unread however slow the machine


@dataclass
class Service:
    url: str
    paths: list[str]  # paths the library holds, none asked for yet
    env: dict[str, str]
    hung: list[str]  # paths whose reads never end until cancelled

    def take(self, n: int) -> list[str]:
        taken, self.paths = self.paths[:n], self.paths[n:]
        return taken

    def surl(self, path: str) -> str:
        return self.url + path


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    tmp = tmp_path_factory.mktemp("gfal2")
    port = free_port()
    catalogue = list(build_simulated_adapter(LIBRARY, ManualClock()).library.catalogue)
    hung = catalogue[-HUNG_PATHS:]
    library = {**LIBRARY, "faults": {"hung_reads": [{"path": path} for path in hung]}}
    env = service_environment(write_carousel_config(tmp, port=port, library=library))
    env["GFAL_PYTHONBIN"] = SYSTEM_PYTHON  # the gfal-* scripts would otherwise run the venv's python
    process, log = start_carousel(tmp, env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(url, process, log)
        except ServiceNotReady as exc:
            pytest.fail(str(exc))
        banner = log.read_text()
        assert f"listening on {url}" in banner and "anonymous access is on" in banner
        yield Service(url, catalogue[:-HUNG_PATHS], env, hung)
    finally:
        stop(process)


def gfal(service: Service, *args: str) -> str:
    """Runs a gfal-* tool; returns what it printed. They exit 0 even when files failed."""
    result = subprocess.run(
        list(args), env=service.env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S, check=False
    )
    assert result.returncode == 0, f"{args[0]} exited {result.returncode}: {result.stdout}{result.stderr}"
    return result.stdout


def last_status(output: str) -> dict[str, str]:
    """The last thing the tool said about each SURL: READY, QUEUED, or FAILED: <reason>."""
    found: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(r"^(\S+) (?:=> )?(READY|QUEUED|FAILED.*)$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_gfal_bringonline_polls_to_ready_and_fails_a_path_the_library_lacks(service: Service, tmp_path: Path):
    good = [service.surl(p) for p in service.take(3)]
    missing = service.surl(MISSING)
    listing = tmp_path / "surls.txt"
    listing.write_text("\n".join([*good, missing]) + "\n")

    output = gfal(service, "gfal-bringonline", "--from-file", str(listing), "--polling-timeout", "60")

    first = output.split("Request queued")[0]
    assert set(last_status(first).values()) == {"QUEUED"}  # asynchronous: accepted, nothing read yet
    final = last_status(output)
    assert [final[s] for s in good] == ["READY"] * 3
    assert final[missing] == "FAILED: [Tape REST API] not in the library"


def test_gfal_bringonline_one_surl(service: Service):
    surl = service.surl(service.take(1)[0])
    output = gfal(service, "gfal-bringonline", surl, "--polling-timeout", "60")
    assert last_status(output) == {surl: "READY"}


def test_gfal_archivepoll_reports_tape_copies(service: Service):
    on_tape = service.surl(service.take(1)[0])
    output = gfal(service, "gfal-archivepoll", on_tape, "--polling-timeout", "5")
    assert last_status(output) == {on_tape: "READY"}
    missing = service.surl(MISSING)
    output = gfal(service, "gfal-archivepoll", missing, "--polling-timeout", "5")
    assert last_status(output) == {missing: "FAILED: [Tape REST API] not in the library"}


def test_gfal_evict_gives_up_the_disk_copy(service: Service):
    surl = service.surl(service.take(1)[0])
    assert gfal(service, "gfal-xattr", surl, "user.status").strip() == "NEARLINE"
    assert last_status(gfal(service, "gfal-bringonline", surl, "--polling-timeout", "60")) == {surl: "READY"}
    assert gfal(service, "gfal-xattr", surl, "user.status").strip() == "ONLINE_AND_NEARLINE"
    gfal(service, "gfal-evict", surl)
    assert gfal(service, "gfal-xattr", surl, "user.status").strip() == "NEARLINE"


PYTHON_SCENARIO = r"""
import errno, json, sys, time
import gfal2

request = json.loads(sys.argv[1])
ctx = gfal2.creat_context()


def answers(errors):
    return [None if e is None else [e.code, e.message] for e in errors]


out = {}
surls = request["stage"]
errors, token = ctx.bring_online(surls, 0, 60, True)
out["token"], out["submitted"] = token, answers(errors)
deadline = time.monotonic() + 60
while True:
    errors = ctx.bring_online_poll(surls, token)
    out["poll_gave_up"] = time.monotonic() > deadline
    if all(e is None or e.code != errno.EAGAIN for e in errors) or out["poll_gave_up"]:
        break
    time.sleep(0.2)
out["polled"] = answers(errors)
out["released"] = answers(ctx.release(request["release"], token))

errors, abort_token = ctx.bring_online(request["abort"], 0, 60, True)
out["abort_token"] = abort_token
out["aborted"] = answers(ctx.abort_bring_online(request["abort"], abort_token))
out["after_abort"] = answers(ctx.bring_online_poll(request["abort"], abort_token))
print(json.dumps(out))
"""


def test_python_gfal2_bring_online_poll_release_and_abort(service: Service):
    good = [service.surl(p) for p in service.take(2)]
    missing = service.surl(MISSING)
    to_abort = [service.surl(p) for p in service.hung]  # surely not read before the abort
    request = {"stage": [*good, missing], "release": good, "abort": to_abort}
    result = subprocess.run(
        [SYSTEM_PYTHON, "-c", PYTHON_SCENARIO, json.dumps(request)],
        env=service.env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)

    assert not out["poll_gave_up"], f"the staged files did not end within 60 s: {out['polled']}"
    assert out["submitted"] == [None, None, None]
    assert out["polled"][:2] == [None, None]  # on disk
    code, message = out["polled"][2]
    assert code != 11 and message == "[Tape REST API] not in the library"  # failed, not EAGAIN
    assert out["released"] == [None, None]
    assert out["aborted"] == [None, None]
    # The specification's spelling, which gfal2 2.21 reports as an unrecognised (terminal) state
    assert all("status=CANCELLED" in message for _, message in out["after_abort"])

    staged = httpx.get(f"{service.url}/api/v1/stage/{out['token']}").json()
    by_path = {f["path"]: f for f in staged["files"]}
    paths = [s.removeprefix(service.url) for s in good]
    assert [by_path[p]["state"] for p in [*paths, MISSING]] == ["COMPLETED", "COMPLETED", "FAILED"]
    assert by_path[MISSING]["error"] == "not in the library"
    where = httpx.post(f"{service.url}/api/v1/archiveinfo", json={"paths": paths}).json()
    assert [w["locality"] for w in where] == ["TAPE", "TAPE"]  # released: the disk copies may go
    aborted = httpx.get(f"{service.url}/api/v1/stage/{out['abort_token']}").json()
    assert [f["state"] for f in aborted["files"]] == ["CANCELLED", "CANCELLED"]
    assert "completedAt" in aborted


def test_gfal_bringonline_staging_metadata_sets_the_activity(service: Service):
    # As FTS does: ask gfal2 for the endpoint's sitename (from the discovery document), then key the
    # metadata by it; gfal2 sends it as files[i].targetedMetadata.
    surl = service.surl(service.take(1)[0])
    site = gfal(service, "gfal-xattr", surl, "taperestapi.sitename").strip()
    assert site == "carousel"
    metadata = json.dumps({site: {"activity": "Data Consolidation"}, "OTHER-SITE": {"activity": "Other"}})
    output = gfal(
        service, "gfal-bringonline", surl, "--staging-metadata", metadata, "--polling-timeout", "60"
    )
    assert last_status(output) == {surl: "READY"}
    newest = httpx.get(f"{service.url}/api/native/v1/requests", params={"limit": 1}, timeout=10).json()
    assert newest["requests"][0]["activity"] == "Data Consolidation"
