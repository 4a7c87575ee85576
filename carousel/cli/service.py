"""Running the service: `carousel serve`, `carousel api` and `carousel scheduler`.

Imported by their commands only, when they run: the service's stack (FastAPI, SQLAlchemy, the scheduler,
the adapters) takes a second or more to load, and the commands that only talk to a running service need none
of it.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import structlog
import uvicorn
from fastapi import FastAPI
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.app import create_app
from carousel.api.http_server import OPEN_FILES_RESERVE, open_files_for, server_config
from carousel.buffer.layout import BufferLayout, BufferUnwritable
from carousel.cli.console import CliFailure, err, out
from carousel.cli.metrics_files import metrics_directory
from carousel.cli.strays import warn_of_strays
from carousel.cli.workers import run_workers
from carousel.config import Settings, buffer_directory
from carousel.config.libraries import build_libraries, libraries_of
from carousel.db.engine import make_session_factory, open_database, printable_url, transaction
from carousel.db.library_queries import queued_bytes_by_library
from carousel.db.media_queries import held_tape_states
from carousel.domain.clock import Clock, SystemClock
from carousel.domain.media import TapeState
from carousel.logging import configure_logging
from carousel.observability.cycles import observed
from carousel.observability.exposition import serve_metrics
from carousel.observability.metrics import MULTIPROCESS_DIR_ENV, ServiceMetrics
from carousel.policy_admin.active import ActivePolicy
from carousel.scheduler.cycle import Cycle, CycleReport
from carousel.scheduler.event_pruning import INTERVAL_S as PRUNE_INTERVAL_S
from carousel.scheduler.event_pruning import AppliedEventsPruner
from carousel.scheduler.runner import CycleRunner, SideJob
from carousel.scheduler.site_cycle import SiteCycle
from carousel.webhooks.deliverer import WebhookDeliverer
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import Site

LISTEN_BACKLOG = 2048


@dataclass
class Parts:
    """What one process of the service holds: built from settings at start, closed at stop."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    adapter: HsmAdapter  # the API's: the one library's adapter, or the site's (hsm_adapters.site) of several
    clock: Clock
    metrics: ServiceMetrics  # one registry for the process: its API's and its scheduler's figures
    buffer: BufferLayout | None = None  # the disk buffer, when it is on (docs/data-path.md)
    libraries: dict[str, HsmAdapter] = field(default_factory=dict)  # each library's adapter, by name


def prepared_buffer(settings: Settings) -> BufferLayout | None:
    """The disk buffer, its directories made and proved writable; a one-line failure naming the one that is
    not. None when the buffer is off."""
    if not settings.buffer.enabled:
        return None
    layout = BufferLayout.at(buffer_directory(settings))
    try:
        layout.prepare()
    except BufferUnwritable as exc:
        raise CliFailure(str(exc)) from exc
    return layout


@contextmanager
def service_parts(settings: Settings, *, cycles: bool = True) -> Iterator[Parts]:
    """`cycles`: the process runs the scheduler's cycle (its metrics count the cycles' figures)."""
    configure_logging(settings.log_format, settings.log_level)
    buffer = prepared_buffer(settings)
    engine = open_database(settings)
    try:
        clock = SystemClock()
        session_factory = make_session_factory(engine)
        libraries = build_libraries(settings, clock)
        adapter = site_of(libraries, session_factory, named=bool(settings.libraries))
        try:
            yield Parts(
                settings,
                engine,
                session_factory,
                adapter,
                clock,
                ServiceMetrics(cycles=cycles, libraries=libraries),
                buffer,
                libraries,
            )
        finally:
            for each in libraries.values():
                each.close()
    finally:
        engine.dispose()


def site_of(
    libraries: dict[str, HsmAdapter], session_factory: sessionmaker[Session], *, named: bool
) -> HsmAdapter:
    """What the API asks: the one library `default`'s adapter, or the site's (hsm_adapters.site) when the
    settings name their libraries, even one, so each file's row records its library's name; a site of
    several weighs the tapes operators hold and the bytes each library has queued when it chooses a copy."""
    if not named:
        return next(iter(libraries.values()))

    def backlog() -> dict[str, int]:
        with transaction(session_factory) as session:
            return queued_bytes_by_library(session)

    def tape_states() -> dict[tuple[str, str], TapeState]:
        with transaction(session_factory) as session:
            return held_tape_states(session)

    return Site(libraries, backlog=backlog, tape_states=tape_states)


def _cycle(parts: Parts) -> tuple[Cycle | SiteCycle, CycleRunner]:
    # the admins' choice (carousel policy set, the admin API), read by every cycle; the settings' until then
    active = ActivePolicy(parts.settings, parts.session_factory)
    cycle: Cycle | SiteCycle
    if parts.settings.libraries:  # named libraries, one or several: their rows carry their names
        # each library plans with a policy of its own, all of them the admins' choice
        policies = {
            name: ActivePolicy(parts.settings, parts.session_factory).current for name in parts.libraries
        }
        cycle = SiteCycle(
            parts.settings,
            parts.session_factory,
            parts.libraries,
            policies,
            parts.clock,
            lookup=parts.adapter,
        )
    else:
        cycle = Cycle(
            parts.settings,
            parts.session_factory,
            parts.adapter,
            active.current(),
            parts.clock,
            policy_source=active.current,
        )
    deliverer = WebhookDeliverer(
        parts.settings.webhooks, parts.session_factory, parts.clock, on_report=parts.metrics.observe_webhooks
    )
    webhooks = SideJob(
        "carousel-webhooks", deliverer.run_once, parts.settings.webhooks.interval_s, close=deliverer.close
    )
    pruner = AppliedEventsPruner(
        parts.session_factory, parts.clock, parts.settings.applied_events_retention_s
    )
    # at start too: a process restarted more often than hourly would otherwise never prune
    pruning = SideJob("carousel-prune-applied-events", pruner.run_once, PRUNE_INTERVAL_S, run_at_start=True)
    # the library's events applied as they arrive, between cycles (carousel.scheduler.live_events)
    pump = cycle.pump if isinstance(cycle, SiteCycle) else cycle.live.pump
    events = SideJob("carousel-events", pump, parts.settings.event_apply_interval_s, loop=True)
    runner = CycleRunner(
        observed(cycle.run_once, parts.metrics),
        parts.settings.cycle_interval_s,
        side_jobs=[webhooks, pruning, events],
    )
    return cycle, runner


def _listen(host: str, port: int, *, shared: bool = False, listen: bool = True) -> socket.socket:
    """The listening socket, bound before anything is announced, so a taken port is a clear one-line error.
    `shared`: SO_REUSEPORT, for the workers of `carousel api --workers N` (each its own socket on the port);
    without `listen` the port is only reserved (the supervisor's, which takes no connection)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise CliFailure(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        if listen:
            sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise CliFailure(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def _refuse_if_served(host: str, port: int) -> None:
    """A one-line error when something already answers on the port. The workers' sockets share it
    (SO_REUSEPORT), so binding does not fail when another `carousel api --workers` of the same user still
    serves it: the two would split the connections, and each scrape of /metrics would count either one."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        with socket.create_connection((target, port), timeout=1.0):
            pass
    except OSError:
        return  # nothing listens there
    raise CliFailure(
        f"cannot listen on {host}:{port}: another process serves it (a carousel api --workers still running?)"
    )


def _room_for_connections(settings: Settings) -> None:
    """A one-line error when the open-file limit cannot hold http.max_connections (and the rest)."""
    try:
        soft = open_files_for(settings.http)
    except (OSError, ValueError) as exc:
        raise CliFailure(f"cannot raise the open-file limit for http.max_connections: {exc}") from exc
    if soft < settings.http.max_connections + OPEN_FILES_RESERVE:
        raise CliFailure(
            f"http.max_connections is {settings.http.max_connections}, but the open-file limit is {soft}: "
            f"set it to at most {soft - OPEN_FILES_RESERVE} (CAROUSEL_HTTP__MAX_CONNECTIONS) or raise the "
            "limit (ulimit -n, LimitNOFILE=)"
        )


def _app(parts: Parts) -> FastAPI:
    return create_app(
        parts.settings,
        adapter=parts.adapter,
        clock=parts.clock,
        session_factory=parts.session_factory,
        metrics=parts.metrics,
    )


def serve_http(parts: Parts, *, with_scheduler: bool) -> None:
    settings = parts.settings
    workers = settings.api_workers
    if with_scheduler and workers > 1:
        raise CliFailure(
            f"api_workers is {workers}, but `carousel serve` is one process: run `carousel api --workers "
            f"{workers}` and `carousel scheduler` beside it"
        )
    api = _app(parts)
    scheduling = _cycle(parts) if with_scheduler else None
    _room_for_connections(settings)
    with _listen(settings.host, settings.port, shared=workers > 1, listen=workers == 1) as sock:
        host, port = sock.getsockname()[:2]
        if workers > 1:
            _refuse_if_served(host, port)
        base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        what = "API and scheduler" if with_scheduler else "API"
        processes = f", {workers} worker processes" if workers > 1 else ""
        out.print(
            f"carousel {what} listening on {base}{processes} (Tape REST: {base}/api/v1, docs: {base}/docs)"
        )
        out.print(f"library: {_describe_library(parts)}", soft_wrap=True)
        _print_strays(parts)
        out.print(f"database: {printable_url(settings.database_url)}")
        out.print(_describe_buffer(settings), soft_wrap=True)
        if settings.anonymous:
            out.print("anonymous access is on: anyone who can reach this address can stage files")
        if workers > 1:
            parts.engine.dispose()  # each worker has an engine of its own
            with metrics_directory() as metrics_files:
                os.environ[MULTIPROCESS_DIR_ENV] = str(metrics_files)  # the workers inherit it
                run_workers(partial(api_worker, settings, host, port), workers)
            return
        server = uvicorn.Server(server_config(api, settings, parts.metrics))
        if scheduling is not None:
            scheduling[1].start()
        try:
            _settled()
            server.run(sockets=[sock])
        finally:
            if scheduling is not None:
                scheduling[1].stop()
                scheduling[0].close()  # gives up the leader lock: a standby takes over at once


def api_worker(settings: Settings, host: str, port: int, index: int) -> None:
    """One of `carousel api --workers N`'s processes (carousel.cli.workers): the supervisor's settings, its
    own engine, adapter, app and metrics, and its own socket on the supervisor's port."""
    sock = _listen(host, port, shared=True)
    with sock, service_parts(settings, cycles=False) as parts:
        # every line this worker logs says which worker it is (the calls' tasks and threads inherit it)
        structlog.contextvars.bind_contextvars(worker=index)
        server = uvicorn.Server(server_config(_app(parts), parts.settings, parts.metrics))
        _settled()
        server.run(sockets=[sock])


def _settled() -> None:
    """Everything made at start (modules, app, settings, catalogue) kept out of the garbage collector's
    full passes: they outlive the process, and each pass under load would walk them all again."""
    gc.collect()
    gc.freeze()


def _describe_buffer(settings: Settings) -> str:
    """One line: where staged files land and how much they may take, or that no bytes are kept."""
    buffer = settings.buffer
    if not buffer.enabled:
        return "disk buffer: off (files are staged without bytes)"
    return (
        f"disk buffer: {buffer_directory(settings)}, {buffer.capacity_bytes / 2**30:g} GiB, files held"
        f" {buffer.default_lifetime_s / 3600:g} h unless released (GET a staged file's URL to read it)"
    )


def run_scheduler(settings: Settings, *, once: bool) -> None:
    """The scheduler alone: a cycle every cycle_interval_s until SIGINT or SIGTERM; with once, one cycle."""
    with service_parts(settings) as parts:
        cycle, runner = _cycle(parts)
        out.print(f"library: {_describe_library(parts)}", soft_wrap=True)
        _print_strays(parts)
        if once:
            _print_cycle(cycle.run_once())
            cycle.close()
            return
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        out.print(f"carousel scheduler: a cycle every {parts.settings.cycle_interval_s:g} s (Ctrl-C stops)")
        stop_metrics = _scheduler_metrics(parts)
        runner.start()
        try:
            stop.wait()
        finally:
            runner.stop()
            cycle.close()  # gives up the leader lock: a standby takes over at once
            stop_metrics()


def _describe_library(parts: Parts) -> str:
    """Each adapter's own one-line description when it has one (the simulated library says its size),
    named by library when the settings name their libraries (their rows carry that name), even one."""
    settings = libraries_of(parts.settings)

    def described(name: str, adapter: HsmAdapter) -> str:
        describe = getattr(adapter, "describe", None)
        return str(describe()) if callable(describe) else f"{settings[name].adapter} adapter"

    if len(parts.libraries) == 1 and not parts.settings.libraries:
        return described(*next(iter(parts.libraries.items())))
    return "; ".join(f"{name}: {described(name, a)}" for name, a in parts.libraries.items())


def _print_strays(parts: Parts) -> None:
    """Beside the libraries, each one the settings no longer name that files still wait for (and a WARNING
    in the log for each)."""
    for line in warn_of_strays(parts.session_factory, parts.libraries):
        out.print(line, soft_wrap=True)


def _scheduler_metrics(parts: Parts) -> Callable[[], None]:
    """/metrics on scheduler_metrics_port when set; returns what stops it."""
    port = parts.settings.scheduler_metrics_port
    if port is None:
        return lambda: None
    parts.metrics.watch_database(parts.session_factory, parts.clock)
    try:
        bound, stop = serve_metrics(parts.metrics, parts.settings.host, port)
    except OSError as exc:
        where = f"{parts.settings.host}:{port}"
        raise CliFailure(f"cannot serve metrics on {where}: {exc.strerror or exc}") from exc
    out.print(f"metrics on http://{parts.settings.host}:{bound}/metrics")
    return stop


def _print_cycle(report: CycleReport) -> None:
    if report.database_unavailable:
        raise CliFailure(report.errors[-1])
    if not report.leader:
        out.print("another scheduler holds the leader lock: nothing done")
        return
    out.print(
        f"health {report.health}; tapes with work {report.tapes_with_work}; claimed {report.claimed}; "
        f"submitted {report.files_submitted} files in {report.batches_submitted} batches; "
        f"recovered {report.recovered_claims}; cancelled {report.cancelled}; {report.elapsed_s * 1000:.0f} ms"
    )
    for problem in report.errors:
        err.print(f"error: {problem}")
