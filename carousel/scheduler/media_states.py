"""Tapes and drives as operators set them, applied by the leading scheduler at each cycle (docs/admin.md):

- the library's reports of mounts: a mount that fails counts against its tape, one that works clears the
  count; a tape that fails `media.break_after_failed_mounts` mounts in a row is set broken by the service
  (audited as `service`);
- held tapes (disabled, broken): files handed to the library before the change and not started there are
  taken back (cancelled at the library, queued again), so the library does not read them while the tape is
  held; those it has started are read;
- broken tapes: their queued files are moved to another copy where the site holds one on a tape that is not
  broken (`carousel.scheduler.other_copies`), else fail with the tape's reason;
- drives: each admin's change is handed to the adapter once per leadership term (a new leader hands over
  every recorded state again, as its library may have restarted); a change the adapter refuses is tried
  again at the next cycle.

Everything is per library (a tape is (library, tape), a drive (library, drive)): each library's cycle counts
its own mounts, takes back and fails its own files and hands its own drives to its own adapter.

Disabled tapes need nothing here: the queue store leaves them out of every snapshot (they wait, saying why).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import media_queries as m
from carousel.db.engine import run_transaction
from carousel.db.queue_queries import settle_cancelled
from carousel.domain.clock import Clock
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.media import SERVICE_WHO, DownMode, DriveState, DriveStatus, MediaKind, TapeState
from carousel.scheduler.other_copies import (
    NoOtherCopy,
    NotKnownYet,
    OtherCopy,
    other_copies,
    several_libraries,
)
from hsm_adapters.base import ControlsDrives, DriveCommand, Event, EventKind, HsmAdapter

log = structlog.get_logger(__name__)

TAKE_BACK_PER_CYCLE = 10_000
SETTLE_PER_CYCLE = 10_000  # queued files of broken tapes looked up, moved or failed in one cycle


@dataclass(slots=True)
class MediaReport:
    failed_mounts: int = 0  # mount failures the library reported this cycle
    broken_by_service: list[str] = field(default_factory=list)  # tapes set broken after failed mounts
    failed_files: int = 0  # queued files of broken tapes failed
    moved_files: int = 0  # queued files of broken tapes moved to another library's copy
    taken_back: int = 0  # files of held tapes the library gave back before starting them (queued again)
    drive_changes: list[str] = field(default_factory=list)  # "drive03 down_now", handed to the adapter
    errors: list[str] = field(default_factory=list)


def drive_command(status: DriveStatus) -> DriveCommand:
    if status.state is DriveState.UP:
        return DriveCommand.UP
    return DriveCommand.DOWN_NOW if status.mode is DownMode.NOW else DriveCommand.DOWN_AFTER_MOUNT


def broken_reason(tape: str, reason: str | None, library: str | None = None) -> str:
    """What a file of a broken tape fails with: the admin's (or the library's) reason; `library` named on a
    site of several, where tape IDs are unique per library only."""
    where = f"tape {tape}" if library is None else f"tape {tape} of library {library}"
    return f"{where} is broken: {reason}" if reason else f"{where} is broken"


class MediaStates:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        adapter: HsmAdapter,
        clock: Clock,
        *,
        break_after_failed_mounts: int,
        library: str = DEFAULT_LIBRARY,
        lookup: HsmAdapter | None = None,
    ) -> None:
        self.session_factory = session_factory
        # this library's tapes, files and drives only (a site of several: each library's cycle its own)
        self.library = library
        self.lookup = lookup  # the site's lookup, where another copy of a broken tape's file is found
        self.adapter = adapter
        self.clock = clock
        self.break_after = break_after_failed_mounts
        self._mounts: list[tuple[str, bool, str | None]] = []  # (tape, mounted, reason), not yet counted
        self._told: dict[str, DriveCommand] = {}  # what the adapter was told this term, per drive
        self._asked_back: set[int] = set()  # files the library said it had started: not asked again

    def new_term(self) -> None:
        self._told.clear()

    def observe(self, events: Iterable[Event]) -> None:
        """The library's events as the cycle polls them (each once): mounts that worked or failed."""
        for event in events:
            if event.tape is None:
                continue
            if event.kind is EventKind.MOUNTED:
                self._mounts.append((event.tape, True, None))
            elif event.kind is EventKind.MOUNT_FAILED:
                self._mounts.append((event.tape, False, event.reason))

    def run(self) -> MediaReport:
        report = MediaReport()
        now = self.clock.now()
        if self._mounts:
            mounts = list(self._mounts)
            broken = run_transaction(self.session_factory, lambda session: self._count(session, mounts, now))
            self._mounts = self._mounts[len(mounts) :]  # counted and committed
            report.failed_mounts = sum(1 for _, mounted, _ in mounts if not mounted)
            report.broken_by_service = broken
            for tape in broken:
                log.warning(
                    "tape set broken after failed mounts",
                    library=self.library,
                    tape=tape,
                    mounts=self.break_after,
                )
        self._take_back(report, now)
        self._settle_broken(report, now)
        self._apply_drives(report)
        return report

    def _count(
        self, session: Session, mounts: list[tuple[str, bool, str | None]], now: datetime
    ) -> list[str]:
        broken: list[str] = []
        for tape, mounted, reason in mounts:
            if mounted:
                m.count_good_mount(session, self.library, tape)
                continue
            count = m.count_failed_mount(session, self.library, tape)
            old = m.tape_status(session, self.library, tape).state
            if self.break_after and count >= self.break_after and old is not TapeState.BROKEN:
                why = f"the library failed {count} mounts in a row: {reason or 'no reason given'}"
                m.save_tape_state(
                    session, self.library, tape, TapeState.BROKEN, reason=why, at=now, who=SERVICE_WHO
                )
                m.add_media_audit(
                    session,
                    at=now,
                    who=SERVICE_WHO,
                    kind=MediaKind.TAPE,
                    library=self.library,
                    name=tape,
                    old_state=old.value,
                    new_state=TapeState.BROKEN.value,
                    reason=why,
                )
                broken.append(tape)
        return broken

    def _take_back(self, report: MediaReport, now: datetime) -> None:
        waiting = run_transaction(
            self.session_factory,
            lambda session: m.waiting_at_library(session, TAKE_BACK_PER_CYCLE, self.library),
        )
        self._asked_back &= set(waiting)
        ask = [file_id for file_id in waiting if file_id not in self._asked_back]
        if not ask:
            return
        try:
            answer = self.adapter.cancel([str(file_id) for file_id in ask])
        except Exception as exc:  # the library does not answer: asked again next cycle
            report.errors.append(f"take back files of held tapes: {exc!r}")
            return
        self._asked_back |= {int(key) for key in answer.in_progress}
        stopped = [int(key) for key in (*answer.cancelled, *answer.unknown)]
        _, report.taken_back = run_transaction(
            self.session_factory, lambda session: settle_cancelled(session, stopped, now)
        )

    def _settle_broken(self, report: MediaReport, now: datetime) -> None:
        """The queued files of this library's broken tapes: to another copy where one exists, else failed."""

        def read(session: Session) -> tuple[dict[m.TapeKey, str | None], list[tuple[int, str, str, str]]]:
            broken = m.broken_tapes(session, self.library)
            return broken, m.queued_on(session, list(broken), SETTLE_PER_CYCLE)

        broken, queued = run_transaction(self.session_factory, read)
        if not queued:
            return
        try:
            every_broken = run_transaction(self.session_factory, m.broken_tapes)
            found = other_copies(self.lookup, [path for _, path, _, _ in queued], every_broken)
        except Exception as exc:  # the site's lookup failed: the files wait (held) and are asked about again
            report.errors.append(f"other copies of broken tapes' files: {exc!r}")
            return
        answered = [(f, c) for f, c in zip(queued, found, strict=True) if not isinstance(c, NotKnownYet)]
        files = [file for file, _ in answered]
        copies = [copy for _, copy in answered if not isinstance(copy, NotKnownYet)]
        named = several_libraries(self.lookup)
        report.failed_files, report.moved_files = run_transaction(
            self.session_factory,
            lambda session: _fail_or_move(
                session, files, {**every_broken, **broken}, copies, now, named=named
            ),
        )

    def _apply_drives(self, report: MediaReport) -> None:
        if not isinstance(self.adapter, ControlsDrives):
            return
        wanted = run_transaction(self.session_factory, lambda s: m.drive_statuses(s, self.library))
        names = set(self.adapter.drive_names())
        for drive, status in wanted.items():
            if drive not in names:
                continue  # a drive the library no longer names: kept, handed over if it comes back
            command = drive_command(status)
            if self._told.get(drive) is command:
                continue
            try:
                self.adapter.set_drive(drive, command)
            except Exception as exc:  # the adapter's program failed, the drive is gone: again next cycle
                report.errors.append(f"set_drive {drive} {command.value}: {exc!r}")
                log.warning(
                    "drive state not handed over", drive=drive, command=command.value, error=repr(exc)
                )
                continue
            self._told[drive] = command
            report.drive_changes.append(f"{drive} {command.value}")


def _fail_or_move(
    session: Session,
    queued: list[tuple[int, str, str, str]],
    broken: dict[m.TapeKey, str | None],
    copies: list[OtherCopy | NoOtherCopy],
    now: datetime,
    *,
    named: bool,
) -> tuple[int, int]:
    """Each queued file of a broken tape moved to its other copy, or failed with its tape's reason; returns
    (failed, moved). `named` (a site of several libraries): the reason names the library of each broken copy,
    its own tape's first."""
    reasons: dict[int, str] = {}
    moved = 0
    for (file_id, _, library, tape), copy in zip(queued, copies, strict=True):
        if isinstance(copy, NoOtherCopy):
            keys = [(library, tape), *(key for key in copy.broken if key != (library, tape))]
            reasons[file_id] = "; ".join(
                broken_reason(t, broken.get((lib, t)), lib if named else None) for lib, t in keys
            )
        else:
            moved += m.move_to_copy(
                session,
                file_id,
                library=copy.library,
                tape=copy.tape,
                position_bytes=copy.position_bytes,
                size_bytes=copy.size_bytes,
            )
    return (m.fail_queued(session, reasons, now) if reasons else 0), moved
