"""`carousel tape list|show|disable|break|enable` and `carousel drive list|down|up`: tapes and drives from the
command line, straight on the configured database and library as `carousel policy` is (no running service
needed; whoever can reach the database is an admin). Changes are checked and recorded exactly as through
the admin API (the same use cases, carousel.media_admin); the audit trail names the local user
(`cli:<user>`). The scheduler applies them at its next cycle. docs/admin.md describes it all."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from carousel.cli.console import CliFailure
from carousel.cli.policy import local_user, out, session_of
from carousel.config import load_settings
from carousel.domain.clock import SystemClock
from carousel.domain.errors import DomainError

if TYPE_CHECKING:
    from carousel.domain.media import TapeState
    from hsm_adapters.base import HsmAdapter

# The database and the adapters are imported inside the commands (see carousel.cli.policy).
tape_app = typer.Typer(add_completion=False, help="Tapes: list, show, disable, break, enable.")
drive_app = typer.Typer(add_completion=False, help="Drives: list, take down, bring up.")

Reason = Annotated[str, typer.Option("--reason", help="why, one line: kept in the audit trail")]
TapeName = Annotated[str, typer.Argument(metavar="TAPE", help="the cartridge's name, as the library says it")]
DriveName = Annotated[str, typer.Argument(metavar="DRIVE", help="the drive's name (carousel drive list)")]


@contextmanager
def configured_library() -> Iterator[HsmAdapter]:
    """The library the settings name: it says which tapes and drives exist."""
    from hsm_adapters.registry import build_adapter  # noqa: PLC0415

    settings = load_settings()
    adapter = build_adapter(settings.adapter, settings.adapter_options, SystemClock())
    try:
        yield adapter
    finally:
        adapter.close()


@contextmanager
def naming_the_field() -> Iterator[None]:
    """A refusal names its field first, as the API's problem does (`tape: no tape 'T9'…`)."""
    try:
        yield
    except DomainError as exc:
        if exc.field is None:
            raise
        raise CliFailure(f"{exc.field}: {exc.detail}") from None


def _when(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value is not None else ""


# --- tapes ----------------------------------------------------------------------------------------------


@tape_app.command("list")
def tape_list() -> None:
    """Tapes whose state was ever set (or whose mounts failed); every other tape is active."""
    from carousel.media_admin import tapes  # noqa: PLC0415

    with session_of(load_settings()) as session:
        statuses = tapes.list_tapes(session)
    if not statuses:
        out.print("every tape is active: none was ever disabled or broken")
        return
    table = Table(show_edge=False)
    for column in ("tape", "state", "failed mounts", "since", "by", "why"):
        table.add_column(column)
    for status in statuses:
        table.add_row(
            status.tape,
            status.state.value,
            str(status.failed_mounts),
            _when(status.changed_at),
            status.changed_by or "",
            status.reason or "",
        )
    out.print(table)


@tape_app.command("show")
def tape_show(tape: TapeName) -> None:
    """One tape (JSON): its state, why, who set it and when, and the service's files on it by state."""
    from carousel.media_admin import tapes  # noqa: PLC0415

    with naming_the_field(), configured_library() as library, session_of(load_settings()) as session:
        view = tapes.show_tape(session, library, tape)
    status = view.status
    document = {
        "tape": status.tape,
        "state": status.state.value,
        "reason": status.reason,
        "changed_at": _when(status.changed_at) or None,
        "changed_by": status.changed_by,
        "failed_mounts": status.failed_mounts,
        "files": view.files,
    }
    typer.echo(json.dumps(document, indent=2))


def _change_tape(tape: str, state: TapeState, reason: str, effect: str) -> None:
    from carousel.media_admin import tapes  # noqa: PLC0415

    with naming_the_field(), configured_library() as library, session_of(load_settings()) as session:
        done = tapes.change_tape(
            session, library, SystemClock(), tape=tape, state=state, reason=reason, who=local_user()
        )
    out.print(f"tape {done.status.tape} is {done.status.state.value}: {effect}", markup=False)


@tape_app.command("disable")
def tape_disable(tape: TapeName, reason: Reason) -> None:
    """Do not mount TAPE: its files wait (tape_disabled) until it is enabled."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(tape, TapeState.DISABLED, reason, "its files wait until it is enabled")


@tape_app.command("break")
def tape_break(tape: TapeName, reason: Reason) -> None:
    """TAPE is broken: its queued files fail with REASON at the scheduler's next cycle."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(tape, TapeState.BROKEN, reason, "its queued files fail at the next cycle")


@tape_app.command("enable")
def tape_enable(tape: TapeName, reason: Reason) -> None:
    """TAPE is active again: its waiting files are planned from the next cycle on."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(tape, TapeState.ACTIVE, reason, "its files are planned from the next cycle on")


# --- drives ---------------------------------------------------------------------------------------------


@drive_app.command("list")
def drive_list() -> None:
    """The library's drives, as admins want them (up unless taken down)."""
    from carousel.media_admin import drives  # noqa: PLC0415

    with naming_the_field(), configured_library() as library, session_of(load_settings()) as session:
        statuses = drives.list_drives(session, library)
    if not statuses:
        out.print("the library lets carousel take none of its drives down")
        return
    table = Table(show_edge=False)
    for column in ("drive", "state", "mode", "since", "by", "why"):
        table.add_column(column)
    for status in statuses:
        table.add_row(
            status.drive,
            status.state.value,
            status.mode.value if status.mode is not None else "",
            _when(status.changed_at),
            status.changed_by or "",
            status.reason or "",
        )
    out.print(table)


@drive_app.command("down")
def drive_down(
    drive: DriveName,
    reason: Reason,
    now: Annotated[
        bool, typer.Option("--now", help="stop at once (the read in progress is read again elsewhere)")
    ] = False,
) -> None:
    """Take DRIVE down after its current mount (or --now); it takes no new mount until it is up."""
    from carousel.domain.media import DownMode, DriveState  # noqa: PLC0415
    from carousel.media_admin import drives  # noqa: PLC0415

    mode = DownMode.NOW if now else DownMode.AFTER_MOUNT
    with naming_the_field(), configured_library() as library, session_of(load_settings()) as session:
        drives.change_drive(
            session,
            library,
            SystemClock(),
            drive=drive,
            state=DriveState.DOWN,
            mode=mode,
            reason=reason,
            who=local_user(),
        )
    when = "at once" if now else "after its current mount"
    out.print(f"drive {drive} goes down {when}, at the scheduler's next cycle", markup=False)


@drive_app.command("up")
def drive_up(drive: DriveName, reason: Reason) -> None:
    """Bring DRIVE up again: it takes mounts from the scheduler's next cycle on."""
    from carousel.domain.media import DriveState  # noqa: PLC0415
    from carousel.media_admin import drives  # noqa: PLC0415

    with naming_the_field(), configured_library() as library, session_of(load_settings()) as session:
        drives.change_drive(
            session,
            library,
            SystemClock(),
            drive=drive,
            state=DriveState.UP,
            mode=None,
            reason=reason,
            who=local_user(),
        )
    out.print(f"drive {drive} comes up at the scheduler's next cycle", markup=False)
