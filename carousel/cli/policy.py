"""`carousel policy show|set|audit|dry-run|replay`: policy administration from the command line, straight
on the configured database (no running service needed; whoever can reach the database is an admin).
Changes are validated and recorded exactly as through the admin API; the audit trail names the local user
(`cli:<user>`). docs/admin.md describes it all."""

from __future__ import annotations

import getpass
import json
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from carousel.config import Settings, library_time_scale, load_settings
from carousel.domain.clock import SystemClock
from carousel.domain.errors import InvalidInput
from carousel.domain.policy_choice import PolicyChoice
from carousel.domain.policy_diff import differences

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from carousel.policy_admin.history_replay import Outcome

# The database, the adapters and the simulator are imported inside the commands, when they run: `carousel`
# loads this module for every command, and `carousel status` must not wait for SQLAlchemy or numpy.
policy_app = typer.Typer(add_completion=False, help="The active scheduling policy: show, change, audit.")
out = Console(highlight=False, width=160)


@contextmanager
def database(settings: Settings) -> Iterator[sessionmaker[Session]]:
    from carousel.db.engine import make_session_factory, open_database  # noqa: PLC0415

    engine = open_database(settings)
    try:
        yield make_session_factory(engine)
    finally:
        engine.dispose()


@contextmanager
def session_of(settings: Settings) -> Iterator[Session]:
    """One transaction on the configured database (its schema checked first), committed at the end."""
    from carousel.db.engine import transaction  # noqa: PLC0415

    with database(settings) as factory, transaction(factory) as session:
        yield session


def local_user() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):  # no user name in the environment nor the password database
        return "cli:unknown"


def read_options(options: str | None, options_file: Path | None) -> dict[str, Any]:
    """--options JSON, or --options-file FILE (TOML, or JSON when it ends in .json); at most one."""
    if options is not None and options_file is not None:
        raise InvalidInput("give --options or --options-file, not both", field="options")
    if options is not None:
        try:
            parsed = json.loads(options)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"--options is not JSON: {exc}", field="options") from exc
    elif options_file is not None:
        try:
            text = options_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(
                f"--options-file {options_file}: {exc.strerror or exc}", field="options"
            ) from exc
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"--options-file {options_file}: not UTF-8 text: {exc.reason}", field="options"
            ) from None
        try:
            parsed = json.loads(text) if options_file.suffix == ".json" else tomllib.loads(text)
        except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InvalidInput(f"--options-file {options_file}: {exc}", field="options") from exc
    else:
        return {}
    if not isinstance(parsed, dict):
        raise InvalidInput("the options must be a table (a JSON object)", field="options")
    return parsed


OptionsJson = Annotated[str | None, typer.Option("--options", help="the policy's options as a JSON object")]
OptionsFile = Annotated[
    Path | None, typer.Option("--options-file", help="the options from a TOML (or .json) file")
]


@policy_app.command("show")
def show() -> None:
    """The policy the next cycle plans with (JSON)."""
    from carousel.policy_admin import changes  # noqa: PLC0415

    settings = load_settings()
    with session_of(settings) as session:
        active = changes.active_settings(session, settings)
    document = {
        **active.choice.as_dict(),
        "version": active.version,
        "changed_at": active.changed_at.isoformat() if active.changed_at else None,
        "changed_by": active.changed_by,
    }
    typer.echo(json.dumps(document, indent=2))


@policy_app.command("set")
def set_policy(
    name: Annotated[
        str, typer.Argument(metavar="POLICY", help="fifo, star2006, cta, carousel, or a plug-in")
    ],
    *,
    reason: Annotated[str, typer.Option("--reason", help="why: kept in the audit trail")],
    options: OptionsJson = None,
    options_file: OptionsFile = None,
    expected_version: Annotated[
        int | None, typer.Option("--expected-version", help="refuse unless the active version is this one")
    ] = None,
) -> None:
    """Make POLICY with its options the active one from the next cycle on (validated, audited)."""
    from carousel.policy_admin import changes  # noqa: PLC0415

    settings = load_settings()
    choice = PolicyChoice(name, read_options(options, options_file))
    with session_of(settings) as session:
        done = changes.change_policy(
            session,
            settings,
            SystemClock(),
            who=local_user(),
            choice=choice,
            reason=reason,
            expected_version=expected_version,
        )
    if done.entry is None:
        out.print(
            f"unchanged: {name} with these options is the active policy (version {done.active.version})"
        )
        return
    out.print(f"policy {name} is active from the next cycle on (version {done.active.version})")
    for difference in differences(done.entry.old, done.entry.new):
        out.print(f"  {difference.path}: {difference.old} -> {difference.new}")


@policy_app.command("audit")
def audit(limit: Annotated[int, typer.Option(min=1, max=1000, help="the newest N changes")] = 20) -> None:
    """The changes of the policy, newest first: when, who, what, why."""
    from carousel.policy_admin import changes  # noqa: PLC0415

    settings = load_settings()
    with session_of(settings) as session:
        page = changes.audit_trail(session, limit=limit)
    table = Table(show_edge=False)
    for column in ("version", "when", "who", "what changed", "why"):
        table.add_column(column)
    for entry in page.entries:
        what = "; ".join(f"{d.path}: {d.old} -> {d.new}" for d in differences(entry.old, entry.new))
        table.add_row(
            str(entry.version), entry.at.isoformat(timespec="seconds"), entry.who, what, entry.reason
        )
    if not page.entries:
        out.print("no change recorded: the settings' policy is active")
        return
    out.print(table)


def _candidate(
    name: str | None, options: str | None, options_file: Path | None, active: PolicyChoice
) -> PolicyChoice:
    """POLICY with its options; omitted, the active one (with its options unless others are given)."""
    given = read_options(options, options_file) if options is not None or options_file is not None else None
    if name is None or name == active.policy:
        return PolicyChoice(active.policy, given if given is not None else active.options)
    return PolicyChoice(name, given or {})


CandidateName = Annotated[
    str | None, typer.Argument(metavar="[POLICY]", help="the policy to try; default: the active one")
]


@policy_app.command("dry-run")
def dry_run_command(
    name: CandidateName = None,
    *,
    options: OptionsJson = None,
    options_file: OptionsFile = None,
) -> None:
    """What the next cycles would do under POLICY on the live queue, beside the active policy; nothing is
    dispatched. Each library is asked for its health and capacity as the scheduler asks it, and planned on
    its own (a site of several: each library's rows, then the site's)."""
    from carousel.cli.dry_run_view import dry_run_adapter, dry_run_table  # noqa: PLC0415
    from carousel.db.engine import transaction  # noqa: PLC0415
    from carousel.policy_admin import changes  # noqa: PLC0415
    from carousel.policy_admin.dry_run import dry_run  # noqa: PLC0415

    settings = load_settings()
    clock = SystemClock()
    with database(settings) as factory:
        with transaction(factory) as session:
            active = changes.active_settings(session, settings).choice
        candidate = _candidate(name, options, options_file, active)
        adapter = dry_run_adapter(settings, clock)
        try:
            done = dry_run(settings, factory, adapter, clock, candidate=candidate, active=active)
        finally:
            adapter.close()
    out.print(f"{done.under_candidate.tapes} tapes with work at {done.under_candidate.now.isoformat()}")
    out.print(dry_run_table(done))


@policy_app.command("replay")
def replay_command(
    name: CandidateName = None,
    *,
    options: OptionsJson = None,
    options_file: OptionsFile = None,
    hours: Annotated[
        float, typer.Option("--hours", help="the window: requests created in the last H hours")
    ] = 24.0,
    profile: Annotated[
        str | None, typer.Option("--profile", help="drive profile; default: the simulated library's")
    ] = None,
    drives: Annotated[
        int | None, typer.Option("--drives", help="drives; default: the simulated library's")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the whole result as JSON")] = False,
) -> None:
    """Replay the last hours' requests through the simulator under POLICY, beside what happened and the
    active policy's replay of them (docs/admin.md)."""
    from carousel.api.admin_schemas import HistoryReplayOut  # noqa: PLC0415
    from carousel.db.engine import transaction  # noqa: PLC0415
    from carousel.policy_admin import changes  # noqa: PLC0415
    from carousel.policy_admin.history_replay import replay_history  # noqa: PLC0415

    settings = load_settings()
    with database(settings) as factory:
        with transaction(factory) as session:
            active = changes.active_settings(session, settings).choice
        done = replay_history(
            factory,
            settings,
            SystemClock(),
            candidate=_candidate(name, options, options_file, active),
            active=active,
            hours=hours,
            profile=profile,
            drives=drives,
            time_scale=library_time_scale(settings),
        )
    if as_json:
        typer.echo(json.dumps(HistoryReplayOut.of(done).model_dump(mode="json"), indent=2))
        return
    out.print(
        f"{done.requests} requests from {done.since.isoformat(timespec='seconds')} to"
        f" {done.until.isoformat(timespec='seconds')} on {done.library.described}"
    )
    left_out = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in done.skipped.items() if n)
    if left_out:
        out.print(f"files left out: {left_out}")
    if done.note:
        out.print(done.note)
    table = Table(show_edge=False)
    for column in (
        "run",
        "policy",
        "files",
        "staged",
        "failed",
        "waiting",
        "mounts",
        "files/mount",
        "MB/s",
        "makespan s",
        "p50 s",
        "p95 s",
        "p99 s",
    ):
        table.add_column(column, justify="left" if column in ("run", "policy") else "right")
    rows = [("recorded", done.recorded), ("replay (active)", done.under_active)]
    if done.candidate != done.active:
        rows.append(("replay (candidate)", done.under_candidate))
    for label, outcome in rows:
        table.add_row(label, outcome.policy, *_figures(outcome))
    out.print(table)


def _figures(outcome: Outcome) -> list[str]:
    def shown(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    throughput = outcome.throughput_bytes_per_s
    return [
        str(outcome.files),
        str(outcome.staged),
        str(outcome.failed),
        str(outcome.waiting),
        str(outcome.mounts),
        shown(outcome.files_per_mount, 2),
        shown(throughput / 1e6 if throughput is not None else None),
        shown(outcome.makespan_s),
        shown(outcome.latency.p50_s),
        shown(outcome.latency.p95_s),
        shown(outcome.latency.p99_s),
    ]
