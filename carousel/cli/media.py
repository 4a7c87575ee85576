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


Library = Annotated[
    str | None,
    typer.Option(
        "--library", help="the library holding the tape or drive; needed when the name is in several"
    ),
]


@contextmanager
def configured_library() -> Iterator[HsmAdapter]:
    """The library the settings name, or the site of the libraries they name: it says which libraries,
    tapes and drives exist."""
    from carousel.config.libraries import build_libraries  # noqa: PLC0415
    from hsm_adapters.site import Site  # noqa: PLC0415

    settings = load_settings()
    libraries = build_libraries(settings, SystemClock())
    try:
        yield Site(libraries) if settings.libraries else next(iter(libraries.values()))
    finally:
        for adapter in libraries.values():
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


def _in(library: str) -> str:
    """Which library, said when the settings name theirs (one library unnamed says nothing new)."""
    return "" if library == "default" else f" ({library})"


def _when(value: Any) -> str:
    return value.isoformat(timespec="seconds") if value is not None else ""


# --- tapes ----------------------------------------------------------------------------------------------


@tape_app.command("list")
def tape_list(library: Library = None) -> None:
    """Tapes whose state was ever set (or whose mounts failed); every other tape is active."""
    from carousel.media_admin import tapes  # noqa: PLC0415

    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        statuses = tapes.list_tapes(session, site, library)
    if not statuses:
        out.print("every tape is active: none was ever disabled or broken")
        return
    table = Table(show_edge=False)
    for column in ("library", "tape", "state", "failed mounts", "since", "by", "why"):
        table.add_column(column)
    for status in statuses:
        table.add_row(
            status.library,
            status.tape,
            status.state.value,
            str(status.failed_mounts),
            _when(status.changed_at),
            status.changed_by or "",
            status.reason or "",
        )
    out.print(table)


@tape_app.command("show")
def tape_show(tape: TapeName, library: Library = None) -> None:
    """One tape (JSON): its state, why, who set it and when, and the service's files on it by state."""
    from carousel.media_admin import tapes  # noqa: PLC0415

    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        view = tapes.show_tape(session, site, tape, library)
    status = view.status
    document = {
        "library": status.library,
        "tape": status.tape,
        "state": status.state.value,
        "reason": status.reason,
        "changed_at": _when(status.changed_at) or None,
        "changed_by": status.changed_by,
        "failed_mounts": status.failed_mounts,
        "files": view.files,
    }
    typer.echo(json.dumps(document, indent=2))


def _change_tape(tape: str, library: str | None, state: TapeState, reason: str, effect: str) -> None:
    from carousel.media_admin import tapes  # noqa: PLC0415

    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        done = tapes.change_tape(
            session,
            site,
            SystemClock(),
            tape=tape,
            state=state,
            reason=reason,
            who=local_user(),
            library=library,
        )
    status = done.status
    out.print(f"tape {status.tape}{_in(status.library)} is {status.state.value}: {effect}", markup=False)


@tape_app.command("disable")
def tape_disable(tape: TapeName, reason: Reason, library: Library = None) -> None:
    """Do not mount TAPE: its files wait (tape_disabled) until it is enabled."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(tape, library, TapeState.DISABLED, reason, "its files wait until it is enabled")


@tape_app.command("break")
def tape_break(tape: TapeName, reason: Reason, library: Library = None) -> None:
    """TAPE is broken: its queued files fail with REASON at the scheduler's next cycle (or, on a site of
    several libraries, are read from another library's copy where there is one)."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(
        tape,
        library,
        TapeState.BROKEN,
        reason,
        "its queued files fail (or go to another copy) at the next cycle",
    )


@tape_app.command("enable")
def tape_enable(tape: TapeName, reason: Reason, library: Library = None) -> None:
    """TAPE is active again: its waiting files are planned from the next cycle on."""
    from carousel.domain.media import TapeState  # noqa: PLC0415

    _change_tape(tape, library, TapeState.ACTIVE, reason, "its files are planned from the next cycle on")


# --- drives ---------------------------------------------------------------------------------------------


@drive_app.command("list")
def drive_list(library: Library = None) -> None:
    """Every library's drives (or --library's), as admins want them (up unless taken down)."""
    from carousel.media_admin import drives  # noqa: PLC0415

    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        statuses = drives.list_drives(session, site, library)
    if not statuses:
        out.print("the library lets carousel take none of its drives down")
        return
    table = Table(show_edge=False)
    for column in ("library", "drive", "state", "mode", "since", "by", "why"):
        table.add_column(column)
    for status in statuses:
        table.add_row(
            status.library,
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
    library: Library = None,
) -> None:
    """Take DRIVE down after its current mount (or --now); it takes no new mount until it is up."""
    from carousel.domain.media import DownMode, DriveState  # noqa: PLC0415
    from carousel.media_admin import drives  # noqa: PLC0415

    mode = DownMode.NOW if now else DownMode.AFTER_MOUNT
    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        done = drives.change_drive(
            session,
            site,
            SystemClock(),
            drive=drive,
            state=DriveState.DOWN,
            mode=mode,
            reason=reason,
            who=local_user(),
            library=library,
        )
    when = "at once" if now else "after its current mount"
    out.print(
        f"drive {drive}{_in(done.status.library)} goes down {when}, at the scheduler's next cycle",
        markup=False,
    )


@drive_app.command("up")
def drive_up(drive: DriveName, reason: Reason, library: Library = None) -> None:
    """Bring DRIVE up again: it takes mounts from the scheduler's next cycle on."""
    from carousel.domain.media import DriveState  # noqa: PLC0415
    from carousel.media_admin import drives  # noqa: PLC0415

    with naming_the_field(), configured_library() as site, session_of(load_settings()) as session:
        done = drives.change_drive(
            session,
            site,
            SystemClock(),
            drive=drive,
            state=DriveState.UP,
            mode=None,
            reason=reason,
            who=local_user(),
            library=library,
        )
    out.print(f"drive {drive}{_in(done.status.library)} comes up at the scheduler's next cycle", markup=False)
