"""carousel's command line: run the service (serve, api, scheduler), talk to it (submit, status, cancel), find
paths to stage (library files), migrate the database (db upgrade).

The commands that talk to a running service use its native HTTP API (--url, default: the configured host
and port). Every failure is one line on stderr and exit status 2: bad options, an unreachable service, an
unknown request id, a broken configuration.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
import uvicorn
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy import Engine, make_url
from sqlalchemy.orm import Session, sessionmaker
from typer.core import TyperGroup

from carousel.api.app import create_app
from carousel.cli_outlook import outlook_lines
from carousel.cli_policy import policy_app
from carousel.cli_report import report
from carousel.cli_simulate import simulate
from carousel.cli_study import study
from carousel.config import Settings, load_settings
from carousel.db.engine import check_schema_current, make_engine, make_session_factory, upgrade_to_head
from carousel.domain.clock import Clock, SystemClock
from carousel.domain.errors import ConfigError, DomainError
from carousel.logging import configure_logging
from carousel.observability.cycles import observed
from carousel.observability.exposition import serve_metrics
from carousel.observability.metrics import ServiceMetrics
from carousel.policy_admin.active import ActivePolicy
from carousel.scheduler.cycle import Cycle, CycleReport
from carousel.scheduler.event_pruning import INTERVAL_S as PRUNE_INTERVAL_S
from carousel.scheduler.event_pruning import AppliedEventsPruner
from carousel.scheduler.runner import CycleRunner, SideJob
from carousel.webhooks.deliverer import WebhookDeliverer
from hsm_adapters.base import HsmAdapter
from hsm_adapters.registry import build_adapter
from hsm_adapters.simulated.adapter import SimulatedAdapter

NATIVE = "/api/native/v1"
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED")
ERROR_EXIT = 2
LISTEN_BACKLOG = 2048

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class CliFailure(Exception):
    """A failure to report to the user in one line."""


class OneLineErrors(TyperGroup):
    """Every error, the command line's own included, becomes one line on stderr and exit status 2."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(
                args, prog_name, complete_var, standalone_mode=False, windows_expand_args=False, **extra
            )
        except typer.Abort:
            _fail("interrupted", code=130, standalone=standalone_mode)
        except typer.TyperException as exc:  # usage errors: bad or missing options and arguments
            _fail(exc.format_message(), standalone=standalone_mode)
        except (CliFailure, ConfigError, DomainError) as exc:
            _fail(str(exc), standalone=standalone_mode)
        code = result if isinstance(result, int) else 0
        if standalone_mode:
            sys.exit(code)
        return result


def _fail(message: str, *, code: int = ERROR_EXIT, standalone: bool = True) -> None:
    typer.echo(f"carousel: {' '.join(message.split())}", err=True)
    if standalone:
        sys.exit(code)
    raise typer.Exit(code)


app = typer.Typer(cls=OneLineErrors, add_completion=False, help="carousel: a tape staging service.")
db_app = typer.Typer(add_completion=False, help="The database: migrations.")
library_app = typer.Typer(add_completion=False, help="The configured tape library.")
app.add_typer(db_app, name="db")
app.add_typer(library_app, name="library")
app.add_typer(policy_app, name="policy")
app.command("study")(study)
app.command("simulate")(simulate)
app.command("report")(report)


def _help_without_command(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        out.print(ctx.get_help())
        raise typer.Exit(0)


app.callback(invoke_without_command=True)(_help_without_command)
db_app.callback(invoke_without_command=True)(_help_without_command)
policy_app.callback(invoke_without_command=True)(_help_without_command)
library_app.callback(invoke_without_command=True)(_help_without_command)


def main() -> None:
    """The console script."""
    app()


# --- running the service --------------------------------------------------------------------------------


@dataclass
class Parts:
    """What one process of the service holds: built from settings at start, closed at stop."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    adapter: HsmAdapter
    clock: Clock
    metrics: ServiceMetrics  # one registry for the process: its API's and its scheduler's figures


@contextmanager
def service_parts(settings: Settings) -> Iterator[Parts]:
    configure_logging(settings.log_format, settings.log_level)
    engine = make_engine(settings)
    try:
        check_schema_current(engine)
        clock = SystemClock()
        adapter = build_adapter(settings.adapter, settings.adapter_options, clock)
        try:
            yield Parts(settings, engine, make_session_factory(engine), adapter, clock, ServiceMetrics())
        finally:
            adapter.close()
    finally:
        engine.dispose()


def _cycle(parts: Parts) -> tuple[Cycle, CycleRunner]:
    # the admins' choice (carousel policy set, the admin API), read by every cycle; the settings' until then
    active = ActivePolicy(parts.settings, parts.session_factory)
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
    pruning = SideJob("carousel-prune-applied-events", pruner.run_once, PRUNE_INTERVAL_S)
    runner = CycleRunner(
        observed(cycle.run_once, parts.metrics),
        parts.settings.cycle_interval_s,
        side_jobs=[webhooks, pruning],
    )
    return cycle, runner


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is announced, so a taken port is a clear one-line error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise CliFailure(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise CliFailure(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def _serve_http(parts: Parts, *, with_scheduler: bool) -> None:
    settings = parts.settings
    api = create_app(
        settings,
        adapter=parts.adapter,
        clock=parts.clock,
        session_factory=parts.session_factory,
        metrics=parts.metrics,
    )
    scheduling = _cycle(parts) if with_scheduler else None
    with _listen(settings.host, settings.port) as sock:
        host, port = sock.getsockname()[:2]
        base = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        what = "API and scheduler" if with_scheduler else "API"
        out.print(f"carousel {what} listening on {base} (Tape REST: {base}/api/v1, docs: {base}/docs)")
        out.print(f"library: {settings.adapter} adapter; database: {_safe_url(settings.database_url)}")
        if settings.anonymous:
            out.print("anonymous access is on: anyone who can reach this address can stage files")
        # log_config=None: uvicorn's records go through the process's structlog handler
        # proxy_headers off: the client address stays the socket's peer, which is what decides whether a
        # forwarded X.509 subject comes from a trusted proxy (docs/security.md).
        config = uvicorn.Config(api, log_level="warning", log_config=None, proxy_headers=False)
        server = uvicorn.Server(config)
        if scheduling is not None:
            scheduling[1].start()
        try:
            server.run(sockets=[sock])
        finally:
            if scheduling is not None:
                scheduling[1].stop()
                scheduling[0].close()  # gives up the leader lock: a standby takes over at once


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _settings(**overrides: Any) -> Settings:
    return load_settings(**{k: v for k, v in overrides.items() if v is not None})


HostOption = Annotated[str | None, typer.Option("--host", help="address to listen on (settings: host)")]
PortOption = Annotated[
    int | None, typer.Option("--port", min=0, max=65535, help="port to listen on (settings: port)")
]


@app.command()
def serve(host: HostOption = None, port: PortOption = None) -> None:
    """The API and the scheduler in one process (the embedded default)."""
    with service_parts(_settings(host=host, port=port)) as parts:
        _serve_http(parts, with_scheduler=True)


@app.command("api")
def api_only(host: HostOption = None, port: PortOption = None) -> None:
    """The API alone (run `carousel scheduler` beside it)."""
    with service_parts(_settings(host=host, port=port)) as parts:
        _serve_http(parts, with_scheduler=False)


@app.command()
def scheduler(
    once: Annotated[bool, typer.Option("--once", help="run one cycle, print what it did, and exit")] = False,
) -> None:
    """The scheduler alone: a cycle every cycle_interval_s until interrupted."""
    with service_parts(_settings()) as parts:
        cycle, runner = _cycle(parts)
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


# --- talking to the service -----------------------------------------------------------------------------

UrlOption = Annotated[
    str | None, typer.Option("--url", help="the service's base URL (default: the configured host and port)")
]
TIMEOUT_S = 30.0


def _base_url(url: str | None) -> str:
    if url:
        return url.rstrip("/")
    settings = load_settings()
    if settings.public_url:
        return settings.public_url
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{host}:{settings.port}"


def _call(method: str, url: str, *, json: object = None, params: Mapping[str, Any] | None = None) -> Any:
    try:
        response = httpx.request(method, url, json=json, params=params, timeout=TIMEOUT_S)
    except httpx.TransportError as exc:
        raise CliFailure(f"cannot reach carousel at {url}: {exc or type(exc).__name__}") from exc
    if response.status_code >= 400:
        raise CliFailure(_problem_line(response))
    return response.json() if response.content else None


def _problem_line(response: httpx.Response) -> str:
    try:
        problem = response.json()
        title = problem.get("title") or response.reason_phrase
        detail = problem.get("detail")
    except (ValueError, AttributeError):
        title, detail = response.reason_phrase, None
    text = f"{title}: {detail}" if detail else str(title)
    return f"{text} (HTTP {response.status_code} from {response.request.url})"


def _read_paths(paths: Sequence[str], from_file: Path | None) -> list[str]:
    found = list(paths)
    if from_file is not None:
        try:
            text = sys.stdin.read() if str(from_file) == "-" else from_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise CliFailure(f"--from-file {from_file}: {exc.strerror or exc}") from exc
        found.extend(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))
    if not found:
        raise CliFailure("no paths: give PATH arguments or --from-file FILE")
    return found


@app.command()
def submit(
    paths: Annotated[list[str] | None, typer.Argument(help="absolute paths to bring to disk")] = None,
    *,
    from_file: Annotated[
        Path | None, typer.Option("--from-file", help="a file of paths, one a line ('-': standard input)")
    ] = None,
    priority: Annotated[int, typer.Option(help="higher first, within the group's share")] = 0,
    group: Annotated[str | None, typer.Option(help="fair-share group (default: yours)")] = None,
    activity: Annotated[str, typer.Option(help="what the files are for")] = "default",
    url: UrlOption = None,
) -> None:
    """Ask for files to be staged; prints the request id."""
    body: dict[str, Any] = {
        "paths": _read_paths(paths or [], from_file),
        "priority": priority,
        "activity": activity,
    }
    if group is not None:
        body["group"] = group
    answer = _call("POST", f"{_base_url(url)}{NATIVE}/requests", json=body)
    out.print(answer["id"])
    err.print(f"{answer['files_total']} files requested")


def _summary(base: str, request_id: str) -> dict[str, Any]:
    summary: dict[str, Any] = _call("GET", f"{base}{NATIVE}/requests/{request_id}")
    return summary


def _print_summary(summary: Mapping[str, Any]) -> None:
    request = summary["request"]
    table = Table(title=f"request {request['id']}: {request['state']}", show_edge=False)
    for state in summary["counts"]:
        table.add_column(state, justify="right")
    table.add_row(*(str(n) for n in summary["counts"].values()))
    out.print(table)
    for line in outlook_lines(summary.get("outlook")):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def _print_failures(base: str, request_id: str, limit: int = 10) -> None:
    page = _call(
        "GET", f"{base}{NATIVE}/requests/{request_id}/files", params={"state": "FAILED", "limit": limit}
    )
    for file in page["files"]:
        out.print(f"FAILED {file['path']}: {file.get('error') or 'no reason given'}")


def _watch(base: str, request_id: str, timeout_s: float, interval_s: float) -> dict[str, Any]:
    summary = _summary(base, request_id)
    total = summary["request"]["files_total"]
    deadline = time.monotonic() + timeout_s
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[counts]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(request_id, total=total, counts="")
        while True:
            counts = summary["counts"]
            done = sum(counts.get(s, 0) for s in FINAL_STATES)
            shown = " ".join(f"{s}={n}" for s, n in counts.items() if n)
            progress.update(task, completed=done, counts=shown)
            if summary["request"]["state"] != "ACTIVE":
                return summary
            if time.monotonic() >= deadline:
                raise CliFailure(f"request {request_id} still active after {timeout_s:g} s (--timeout)")
            time.sleep(interval_s)
            summary = _summary(base, request_id)


@app.command()
def status(
    request_id: Annotated[str, typer.Argument(metavar="ID", help="the request id submit printed")],
    watch: Annotated[bool, typer.Option("--watch", help="follow the request until it is done")] = False,
    timeout: Annotated[
        float, typer.Option(min=0.0, help="give up watching after this many seconds")
    ] = 3600.0,
    interval: Annotated[float, typer.Option(min=0.05, help="seconds between polls while watching")] = 1.0,
    url: UrlOption = None,
) -> None:
    """A request's files by state; --watch shows a progress bar until every file is done."""
    base = _base_url(url)
    summary = _watch(base, request_id, timeout, interval) if watch else _summary(base, request_id)
    _print_summary(summary)
    if summary["counts"].get("FAILED"):
        _print_failures(base, request_id)


@app.command()
def cancel(
    request_id: Annotated[str, typer.Argument(metavar="ID", help="the request id submit printed")],
    paths: Annotated[list[str] | None, typer.Argument(help="only these files (default: all)")] = None,
    url: UrlOption = None,
) -> None:
    """Cancel a request's files (all of them, or the paths given)."""
    base = _base_url(url)
    body = {"paths": paths} if paths else None
    _print_summary(_call("POST", f"{base}{NATIVE}/requests/{request_id}/cancel", json=body))


# --- the library ----------------------------------------------------------------------------------------


@library_app.command("files")
def library_files(
    limit: Annotated[int, typer.Option(min=1, help="list at most this many")] = 20,
    tape: Annotated[str | None, typer.Option(help="only the files of this cartridge")] = None,
    long: Annotated[bool, typer.Option("--long", "-l", help="with size and cartridge")] = False,
) -> None:
    """Paths the configured library holds, to try staging (one a line: pipe into `submit --from-file -`)."""
    settings = load_settings()
    adapter = build_adapter(settings.adapter, settings.adapter_options, SystemClock())
    try:
        if not isinstance(adapter, SimulatedAdapter):
            raise CliFailure(f"the {settings.adapter!r} adapter keeps no catalogue carousel can list")
        catalogue = adapter.library.catalogue
        if tape is not None and tape not in catalogue.tapes:
            raise CliFailure(f"--tape {tape}: no such cartridge in the library")
        entries = catalogue.on_tape(tape) if tape else (catalogue[p] for p in catalogue)
        for n, entry in enumerate(entries):
            if n >= limit:
                break
            line = f"{entry.path}\t{entry.size_bytes}\t{entry.tape}" if long else entry.path
            typer.echo(line)
    finally:
        adapter.close()


# --- the database ---------------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the configured database to the schema this carousel needs."""
    settings = load_settings()
    revision = upgrade_to_head(settings.database_url)
    out.print(f"database {_safe_url(settings.database_url)} is at revision {revision}")
