"""carousel-xrootd-prepare: the program XRootD's Generic Prepare Interface runs for prepare requests.

    ofs.preplib libXrdOfsPrepGPI.so -admit all -run /usr/local/bin/carousel-xrootd-prepare

stage and prep queue the files in carousel, keeping XRootD's request id as the request's alias; cancel
cancels (some or all files of) the request of that id; evict releases the disk copies of the paths; query
prints the request's per-file states (see query_answer). XRootD answers the client of stage, prep, cancel
and evict before the program ends and only logs a failing exit status, so every failure is also one line
on standard error, which xrootd writes to its log. Exit status: 0 done, 1 the service could not do it,
2 a call or configuration this program cannot work with. Never a traceback.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

import httpx

from carousel.domain.errors import ConfigError
from carousel.xrootd.arguments import Operation, PrepareCall, UsageError, escaped, parse_call
from carousel.xrootd.query_answer import error_answer, request_answer
from carousel.xrootd.service import CarouselService, Refused, ServiceError
from carousel.xrootd.settings import ProgramSettings, load_program_settings

PROGRAM = "carousel-xrootd-prepare"
EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_UNUSABLE = 2
FILES_READ_AT_MOST = 10_000  # XRootD requests hold at most 1024 files; an answer shows about 50
CANCEL_RETRY_S = 0.25
COLOCATION_MAX = 256


class Log:
    """One line per event on standard error, which xrootd copies into its log."""

    def __init__(self, stream: TextIO, call: PrepareCall | None = None) -> None:
        self._stream = stream
        self.call = call

    def __call__(self, message: str) -> None:
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        about = ""
        if self.call is not None:
            call = self.call
            about = " " + escaped(f"{call.operation.value} {call.request_id} ({call.client})")
        # one line whatever the ids, paths and answers hold: xrootd's log is read line by line
        line = escaped(" ".join(message.split()))
        self._stream.write(f"{when} {PROGRAM}[{os.getpid()}]{about}: {line}\n")
        self._stream.flush()


@dataclass(frozen=True)
class Run:
    """One run of the program: what XRootD asked, the settings, the service, and where to write."""

    call: PrepareCall
    settings: ProgramSettings
    service: CarouselService
    out: TextIO
    log: Log
    monotonic: Callable[[], float]
    sleep: Callable[[float], None]


def _stage(run: Run) -> int:
    call = run.call
    alias: str | None = call.request_id if call.has_request_id else None  # its form checked by parse_call
    colocation = call.colocation
    if colocation is not None and len(colocation.encode("utf-8", "surrogateescape")) > COLOCATION_MAX:
        run.log(f"co-location hint dropped: longer than {COLOCATION_MAX} bytes")
        colocation = None
    submitted = run.service.submit(
        call.paths,
        priority=call.priority,
        alias=alias,
        colocation=colocation,
        group=run.settings.group,
        activity=run.settings.activity,
    )
    run.log(f"{submitted.files_total} file(s) queued as carousel request {submitted.request_id}")
    return EXIT_DONE


def _cancel(run: Run) -> int:
    call = run.call
    if not call.has_request_id:
        run.log("cancel needs the request id that prepare -s printed")
        return EXIT_UNUSABLE
    paths = list(call.paths) or None
    # A cancel may overtake the stage it cancels (XRootD runs several programs at once): an id the
    # service does not know yet is asked again for a little while.
    deadline = run.monotonic() + run.settings.cancel_grace_s
    while True:
        try:
            run.service.cancel(call.request_id, paths)
            break
        except Refused as exc:
            if not exc.unknown_request or run.monotonic() >= deadline:
                raise
        run.sleep(CANCEL_RETRY_S)
    run.log(f"cancelled {len(paths)} file(s)" if paths else "cancelled every file")
    return EXIT_DONE


def _evict(run: Run) -> int:
    run.service.release(run.call.request_id, run.call.paths)
    run.log(f"released the disk copies of {len(run.call.paths)} path(s)")
    return EXIT_DONE


def _query(run: Run) -> int:
    call = run.call
    if not call.has_request_id:
        run.out.write(error_answer("query prepare needs the request id that prepare -s printed"))
        return EXIT_DONE
    try:
        request = run.service.request_state(call.request_id)
    except Refused as exc:
        if not exc.unknown_request:
            raise
        run.out.write(error_answer(f"unknown request id {call.request_id}: carousel has no request by it"))
        run.log(str(exc))
        return EXIT_DONE  # answered: the client learns the id is unknown
    files = run.service.files(request.request_id, at_most=FILES_READ_AT_MOST)
    budget = run.settings.max_query_bytes
    run.out.write(request_answer(call.request_id, request, files, asked=call.paths, budget=budget))
    return EXIT_DONE


_OPERATIONS: dict[Operation, Callable[[Run], int]] = {
    Operation.STAGE: _stage,
    Operation.PREP: _stage,
    Operation.CANCEL: _cancel,
    Operation.EVICT: _evict,
    Operation.QUERY: _query,
}


def run(
    argv: Sequence[str],
    env: Mapping[str, str],
    out: TextIO,
    err: TextIO,
    *,
    transport: httpx.BaseTransport | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """One program run; returns the exit status. Settings come from CAROUSEL_XROOTD_* in os.environ and
    the config file; `env` gives XRootD's XRDPREP_* variables."""
    log = Log(err)
    try:
        call = parse_call(argv, env)
    except UsageError as exc:
        log(f"cannot run {' '.join(argv)[:300]!r}: {exc}")
        return EXIT_UNUSABLE
    log.call = call
    is_query = call.operation is Operation.QUERY

    def failed(message: str, status: int) -> int:
        log(message)
        if is_query:
            out.write(error_answer(message))
        return status

    try:
        settings = load_program_settings()
        with CarouselService(settings, transport=transport) as service:
            return _OPERATIONS[call.operation](Run(call, settings, service, out, log, monotonic, sleep))
    except ConfigError as exc:
        return failed(f"carousel-xrootd-prepare is misconfigured: {exc}", EXIT_UNUSABLE)
    except ServiceError as exc:
        return failed(str(exc), EXIT_FAILED)
    except Exception as exc:  # a traceback would land in xrootd's log in pieces: one line instead
        return failed(f"unexpected failure: {type(exc).__name__}: {exc}", EXIT_FAILED)
    finally:
        out.flush()


def main() -> None:
    """The console script."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="surrogateescape")
    sys.exit(run(sys.argv[1:], os.environ, sys.stdout, sys.stderr))
