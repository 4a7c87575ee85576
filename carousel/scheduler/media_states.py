"""Tapes and drives as operators set them, applied by the leading scheduler at each cycle (docs/admin.md):

- the library's reports of mounts: a mount that fails counts against its tape, one that works clears the
  count; a tape that fails `media.break_after_failed_mounts` mounts in a row is set broken by the service
  (audited as `service`);
- held tapes (disabled, broken): files handed to the library before the change and not started there are
  taken back (cancelled at the library, queued again), so the library does not read them while the tape is
  held; those it has started are read;
- broken tapes: their queued files fail with the tape's reason, unless another copy can be read
  (`carousel.scheduler.other_copies`);
- drives: each admin's change is handed to the adapter once per leadership term (a new leader hands over
  every recorded state again, as its library may have restarted); a change the adapter refuses is tried
  again at the next cycle.

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
from carousel.domain.media import SERVICE_WHO, DownMode, DriveState, DriveStatus, MediaKind, TapeState
from carousel.scheduler.other_copies import another_copy
from hsm_adapters.base import ControlsDrives, DriveCommand, Event, EventKind, HsmAdapter

log = structlog.get_logger(__name__)

TAKE_BACK_PER_CYCLE = 10_000


@dataclass(slots=True)
class MediaReport:
    failed_mounts: int = 0  # mount failures the library reported this cycle
    broken_by_service: list[str] = field(default_factory=list)  # tapes set broken after failed mounts
    failed_files: int = 0  # queued files of broken tapes failed
    taken_back: int = 0  # files of held tapes the library gave back before starting them (queued again)
    drive_changes: list[str] = field(default_factory=list)  # "drive03 down_now", handed to the adapter
    errors: list[str] = field(default_factory=list)


def drive_command(status: DriveStatus) -> DriveCommand:
    if status.state is DriveState.UP:
        return DriveCommand.UP
    return DriveCommand.DOWN_NOW if status.mode is DownMode.NOW else DriveCommand.DOWN_AFTER_MOUNT


def broken_reason(tape: str, reason: str | None) -> str:
    """What a file of a broken tape fails with: the admin's (or the library's) reason."""
    return f"tape {tape} is broken: {reason}" if reason else f"tape {tape} is broken"


class MediaStates:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        adapter: HsmAdapter,
        clock: Clock,
        *,
        break_after_failed_mounts: int,
        library: str | None = None,
    ) -> None:
        self.session_factory = session_factory
        # on a site of several, this library's files and drives only (None: every file, every drive)
        self.library = library
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
                log.warning("tape set broken after failed mounts", tape=tape, mounts=self.break_after)
        self._take_back(report, now)
        report.failed_files = run_transaction(
            self.session_factory, lambda session: _fail_broken(session, now)
        )
        self._apply_drives(report)
        return report

    def _count(
        self, session: Session, mounts: list[tuple[str, bool, str | None]], now: datetime
    ) -> list[str]:
        broken: list[str] = []
        for tape, mounted, reason in mounts:
            if mounted:
                m.count_good_mount(session, tape)
                continue
            count = m.count_failed_mount(session, tape)
            old = m.tape_status(session, tape).state
            if self.break_after and count >= self.break_after and old is not TapeState.BROKEN:
                why = f"the library failed {count} mounts in a row: {reason or 'no reason given'}"
                m.save_tape_state(session, tape, TapeState.BROKEN, reason=why, at=now, who=SERVICE_WHO)
                m.add_media_audit(
                    session,
                    at=now,
                    who=SERVICE_WHO,
                    kind=MediaKind.TAPE,
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

    def _apply_drives(self, report: MediaReport) -> None:
        if not isinstance(self.adapter, ControlsDrives):
            return
        wanted = run_transaction(self.session_factory, m.drive_statuses)
        names = set(self.adapter.drive_names())
        for drive, status in wanted.items():
            if drive not in names:
                continue  # another library's drive (a site of several)
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


def _fail_broken(session: Session, now: datetime) -> int:
    """The queued files of broken tapes fail with their tape's reason, but those another copy can serve."""
    broken = m.broken_tapes(session)
    queued = m.queued_on(session, list(broken))
    reasons: dict[int, str] = {}
    for file_id, path, tape in queued:
        if another_copy(path, tape) is not None:
            continue  # to be read from the other copy (several libraries: not in this service yet)
        reasons[file_id] = broken_reason(tape, broken[tape])
    return m.fail_queued(session, reasons, now) if reasons else 0
