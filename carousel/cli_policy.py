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
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings, load_settings
from carousel.db.engine import check_schema_current, make_engine, make_session_factory, transaction
from carousel.domain.clock import SystemClock
from carousel.domain.errors import InvalidInput
from carousel.policy_admin import changes
from carousel.policy_admin.diff import differences
from carousel.policy_admin.model import PolicyChoice

policy_app = typer.Typer(add_completion=False, help="The active scheduling policy: show, change, audit.")
out = Console(highlight=False, width=160)


@contextmanager
def database(settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(settings)
    try:
        check_schema_current(engine)
        yield make_session_factory(engine)
    finally:
        engine.dispose()


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
    settings = load_settings()
    with database(settings) as factory, transaction(factory) as session:
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
    settings = load_settings()
    choice = PolicyChoice(name, read_options(options, options_file))
    with database(settings) as factory, transaction(factory) as session:
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
    settings = load_settings()
    with database(settings) as factory, transaction(factory) as session:
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
