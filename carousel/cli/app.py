"""carousel's command line: run the service (serve, api, scheduler), talk to it (submit, status, cancel), find
paths to stage (library files), migrate the database (db upgrade).

The commands that talk to a running service use its native HTTP API (--url, default: the configured host
and port). Every failure is one line on stderr and exit status 2: bad options, an unreachable service, an
unknown request id, a broken configuration.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import httpx
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from typer.core import TyperGroup

from carousel.cli.console import ERROR_EXIT, CliFailure, err, out
from carousel.cli.media import drive_app, tape_app
from carousel.cli.outlook import files_word, outlook_lines
from carousel.cli.plugins import add_plugin_commands
from carousel.cli.policy import policy_app
from carousel.cli.report import report
from carousel.cli.simulate import simulate
from carousel.config import Settings, load_settings
from carousel.config.libraries import chosen_library, libraries_of, library_adapter
from carousel.domain.errors import ConfigError, DomainError

if TYPE_CHECKING:
    from hsm_adapters.base import HsmAdapter

NATIVE = "/api/native/v1"
FINAL_STATES = ("COMPLETED", "FAILED", "CANCELLED")
# carousel status: what a script can tell from the exit status (docs/cli.md)
ALL_COMPLETED, NOT_ALL_COMPLETED, STILL_ACTIVE = 0, 1, 3


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
        except Exception as exc:  # a bug: still one line, naming what broke, as docs/cli.md promises
            _fail(f"unexpected {type(exc).__name__}: {exc}", standalone=standalone_mode)
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
app.add_typer(tape_app, name="tape")
app.add_typer(drive_app, name="drive")
add_plugin_commands(app)  # `carousel study`, from the studies
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
tape_app.callback(invoke_without_command=True)(_help_without_command)
drive_app.callback(invoke_without_command=True)(_help_without_command)


def main() -> None:
    """The console script."""
    app()


def _settings(**overrides: Any) -> Settings:
    return load_settings(**{k: v for k, v in overrides.items() if v is not None})


HostOption = Annotated[str | None, typer.Option("--host", help="address to listen on (settings: host)")]
PortOption = Annotated[
    int | None, typer.Option("--port", min=0, max=65535, help="port to listen on (settings: port)")
]


@app.command()
def serve(host: HostOption = None, port: PortOption = None) -> None:
    """The API and the scheduler in one process (the embedded default)."""
    from carousel.cli.service import serve_http, service_parts  # noqa: PLC0415 - see scheduler

    with service_parts(_settings(host=host, port=port)) as parts:
        serve_http(parts, with_scheduler=True)


WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers", min=1, max=64, help="processes serving the port (settings: api_workers; default 1)"
    ),
]


@app.command("api")
def api_only(host: HostOption = None, port: PortOption = None, workers: WorkersOption = None) -> None:
    """The API alone (run `carousel scheduler` beside it)."""
    from carousel.cli.service import serve_http, service_parts  # noqa: PLC0415 - see scheduler

    with service_parts(_settings(host=host, port=port, api_workers=workers), cycles=False) as parts:
        serve_http(parts, with_scheduler=False)


@app.command()
def scheduler(
    once: Annotated[bool, typer.Option("--once", help="run one cycle, print what it did, and exit")] = False,
) -> None:
    """The scheduler alone: a cycle every cycle_interval_s until interrupted."""
    from carousel.cli.service import run_scheduler  # noqa: PLC0415 - the service's stack, for the service only

    run_scheduler(_settings(), once=once)


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
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        raise CliFailure(f"cannot reach carousel at {url}: {exc or type(exc).__name__}") from exc
    except UnicodeEncodeError:  # an argument that is not text (bytes from argv that are not UTF-8)
        raise CliFailure("an argument is not UTF-8 text") from None
    if response.status_code >= 400:
        raise CliFailure(_problem_line(response))
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        raise CliFailure(f"{url} did not answer JSON: is it a carousel service?") from None


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
    for n, path in enumerate(found, 1):
        if not _is_text(path):
            raise CliFailure(
                f"PATH argument {n} is not UTF-8 text: {path.encode('utf-8', 'surrogateescape')!r}"
            )
    if from_file is not None:
        text = _utf8_text(from_file)
        found.extend(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))
    if not found:
        raise CliFailure("no paths: give PATH arguments or --from-file FILE")
    return found


def _is_text(argument: str) -> bool:
    """Python keeps argv bytes that are not UTF-8 as lone surrogates: no path can be made of them."""
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _utf8_text(from_file: Path) -> str:
    """The file's (or standard input's, for '-') text; paths are UTF-8, so anything else is refused in one
    line naming where the first bad byte is."""
    where = "standard input" if str(from_file) == "-" else str(from_file)
    try:
        raw = sys.stdin.buffer.read() if str(from_file) == "-" else from_file.read_bytes()
    except OSError as exc:
        raise CliFailure(f"--from-file {where}: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise CliFailure(
            f"--from-file {where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); "
            "paths are read as UTF-8, one a line"
        ) from None


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
    err.print(f"{files_word(answer['files_total'])} requested")


def _summary(base: str, request_id: str) -> dict[str, Any]:
    summary: dict[str, Any] = _call("GET", f"{base}{NATIVE}/requests/{request_id}")
    return summary


def outcome(summary: Mapping[str, Any]) -> tuple[str, int]:
    """What the request came to, in words and as carousel status's exit status: ACTIVE (3) while any file
    is pending; DONE (0) when every file completed; else 1, said FAILED or CANCELLED when every file
    failed or was cancelled, and with the counts when only some were."""
    if summary["request"]["state"] == "ACTIVE":
        return "ACTIVE", STILL_ACTIVE
    counts: Mapping[str, int] = summary["counts"]
    total = sum(counts.values())
    completed = counts.get("COMPLETED", 0)
    if completed == total:
        return "DONE", ALL_COMPLETED
    for state in ("FAILED", "CANCELLED"):
        if counts.get(state, 0) == total:
            return state, NOT_ALL_COMPLETED
    ended = ", ".join(f"{counts[s]} {s}" for s in ("FAILED", "CANCELLED") if counts.get(s))
    return f"DONE, {completed} of {total} COMPLETED ({ended})", NOT_ALL_COMPLETED


def _print_summary(summary: Mapping[str, Any]) -> None:
    request = summary["request"]
    table = Table(title=f"request {request['id']}: {outcome(summary)[0]}", show_edge=False)
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
        # markup off: a path or a library's reason may hold [brackets]
        out.print(
            f"FAILED {file['path']}: {file.get('error') or 'no reason given'}", markup=False, soft_wrap=True
        )


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
    """A request's files by state; --watch shows a progress bar until every file is done. Exit status: 0
    every file completed, 1 done with files failed or cancelled, 3 still active, 2 no answer."""
    base = _base_url(url)
    summary = _watch(base, request_id, timeout, interval) if watch else _summary(base, request_id)
    _print_summary(summary)
    if summary["counts"].get("FAILED"):
        _print_failures(base, request_id)
    raise typer.Exit(outcome(summary)[1])


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
    library: Annotated[
        str | None, typer.Option(help="a site of several: only this library's (default: each in turn)")
    ] = None,
) -> None:
    """Paths the configured library holds, to try staging (one a line: pipe into `submit --from-file -`).
    On a site of several libraries, each library's in turn (with `--long`, the library too)."""
    # the adapters (numpy and the simulator) load for this command only
    from carousel.domain.clock import SystemClock  # noqa: PLC0415

    settings = load_settings()
    chosen = chosen_library(settings, library, field="--library")
    names = [chosen] if chosen is not None else list(libraries_of(settings))
    several = len(libraries_of(settings)) > 1
    left = limit
    held = False  # some library holds --tape
    for name in names:
        adapter = library_adapter(settings, name, SystemClock())
        try:
            printed = _list_catalogue(adapter, settings, name, tape, left, long=long, named=several)
        finally:
            adapter.close()
        held = held or printed is not None
        left -= printed or 0
        if left <= 0:
            break
    if tape is not None and not held:
        raise CliFailure(f"--tape {tape}: no such cartridge in the library")


def _list_catalogue(
    adapter: HsmAdapter,
    settings: Settings,
    name: str,
    tape: str | None,
    limit: int,
    *,
    long: bool,
    named: bool,
) -> int | None:
    """Up to `limit` of one library's paths printed; how many (None: `tape` is none of this library's)."""
    from hsm_adapters.simulated.adapter import SimulatedAdapter  # noqa: PLC0415

    if not isinstance(adapter, SimulatedAdapter):
        raise CliFailure(
            f"the {libraries_of(settings)[name].adapter!r} adapter keeps no catalogue carousel can list"
        )
    catalogue = adapter.library.catalogue
    if tape is not None and tape not in catalogue.tapes:
        return None  # another library of the site may hold it
    entries = catalogue.on_tape(tape) if tape else (catalogue[p] for p in catalogue)
    printed = 0
    for entry in entries:
        if printed >= limit:
            break
        line = f"{entry.path}\t{entry.size_bytes}\t{entry.tape}" if long else entry.path
        typer.echo(f"{line}\t{name}" if long and named else line)
        printed += 1
    return printed


# --- the database ---------------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the configured database to the schema this carousel needs."""
    # SQLAlchemy and Alembic load for this command only
    from carousel.db.engine import printable_url, upgrade_to_head  # noqa: PLC0415

    settings = load_settings()
    revision = upgrade_to_head(settings.database_url)
    out.print(f"database {printable_url(settings.database_url)} is at revision {revision}")
