"""Applies the HSM's events to the queue: file and request states, recalls, mount history.

Idempotent: each (adapter, seq) is recorded in applied_events in the same transaction as the changes it
caused, so an event delivered again (a restart, a replayed log) changes nothing. Deadlock-free with intake:
the rows the events will change are locked first, in the one lock order (carousel.db.lock_order), not in
the library's event order. An event about a file that has since moved on (a recovered claim, a batch that
was cancelled and queued again) is recorded and otherwise ignored, except that bytes read are always counted
in the history.

Fast: a poll brings thousands of events, nearly all mounts, "started" and "on disk". The files they name are
read in one statement, decided on in memory, the events of one row merged into one change, and the changes
written one set-based statement per kind for the lot (carousel.db.completion_bulk; carousel.completion.
mount_changes for the mounts). Failures and cancels (rare) first write what is pending, then go one by one,
so each change still lands in event order where order matters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from carousel.completion.mount_changes import MountChanges
from carousel.completion.read_end import read_end
from carousel.db import completion_bulk as bulk
from carousel.db import completion_queries as q
from carousel.db.lock_order import lock_links_and_files
from carousel.domain.buffer import Pinning
from carousel.domain.completion import Completion, Counted, FileNow, RetryRule, holds_attempt, read_ended
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import FileMove, FileState
from hsm_adapters.base import Event, EventKind

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class CompletionReport:
    applied: int = 0
    duplicates: int = 0
    staged: int = 0
    failed: int = 0
    retried: int = 0
    cancelled: int = 0
    requeued: int = 0  # cancelled by the HSM while someone still wanted the file
    mounts: int = 0  # MOUNTED events applied
    bytes_staged: int = 0  # bytes of FILE_STAGED events of our files, late ones included (they were read)
    stale: list[int] = field(default_factory=list)  # seqs about files that had moved on


def apply_events(
    session: Session,
    adapter: str,
    events: Sequence[Event],
    retry: RetryRule,
    pinning: Pinning | None = None,
    *,
    library: str = DEFAULT_LIBRARY,
) -> CompletionReport:
    """With `pinning` (the disk buffer is on) a staged file's bytes are in the buffer: the file is marked on
    disk from pinning.now and each request waiting for it gets its pin (carousel.completion.landing has
    landed the bytes, or turned the event into a failure). `library`: whose adapter the events came from;
    the mounts they open and close are that library's."""
    report = CompletionReport()
    done = q.applied_seqs(session, adapter, {e.seq for e in events})
    fresh: list[Event] = []
    for event in sorted(events, key=lambda e: e.seq):
        if event.seq in done:
            report.duplicates += 1
            continue
        done.add(event.seq)
        fresh.append(event)
    file_ids = [int(e.file_key) for e in fresh if e.file_key and e.file_key.isdigit()]
    lock_links_and_files(session, file_ids)
    files = bulk.files_now(session, file_ids)
    writes = _Writes(pinning, library)
    for event in fresh:
        _apply_one(session, event, retry=retry, report=report, files=files, writes=writes)
    writes.flush(session)
    q.record_applied(session, adapter, [(e.seq, e.at) for e in fresh])
    report.applied = len(fresh)
    return report


class _Writes:
    """Changes of mount, "started" and "on disk" events not written yet, one entry per row they change (the
    events of one row merged in event order), written one statement per kind of change in the order of a
    recall's life: mounts, recalls, files started, files staged (with their links and requests)."""

    def __init__(self, pinning: Pinning | None, library: str = DEFAULT_LIBRARY) -> None:
        self.pinning = pinning
        self.library = library  # whose events these are: its mounts are its own (docs/decisions.md §17)
        self.mounts = MountChanges()
        self.loose_reads: dict[str, list[int]] = defaultdict(
            lambda: [0, 0]
        )  # tape -> files, bytes (no drive)
        self.recalls: dict[tuple[int, str], dict[str, Any]] = {}  # (file, batch) -> its row
        self.started: dict[int, datetime] = {}  # file -> its first start in this batch
        self.staged: dict[int, dict[str, Any]] = {}  # file -> its row

    def recall_started(self, file_id: int, batch_key: str, at: datetime, drive: str | None) -> None:
        row = self._recall(file_id, batch_key)
        if row["finished_at"] is None:  # a recall's start after its end in one batch: its start came first
            row["started_at"] = at
            row["drive"] = drive or row["drive"]

    def recall_finished(self, file_id: int, batch_key: str, event: Event, outcome: FileState) -> None:
        row = self._recall(file_id, batch_key)
        if row["finished_at"] is not None:
            return  # ended once: a second end finds the recall closed
        row.update(
            finished_at=event.at,
            outcome=outcome.value,
            bytes=event.bytes,
            reason=event.reason,
            drive=event.drive or row["drive"],
        )

    def _recall(self, file_id: int, batch_key: str) -> dict[str, Any]:
        key = (file_id, batch_key)
        row = self.recalls.get(key)
        if row is None:
            row = self.recalls[key] = {
                "file_id": file_id,
                "batch_key": batch_key,
                "started_at": None,
                "finished_at": None,
                "outcome": None,
                "bytes": 0,
                "drive": None,
                "reason": None,
            }
        return row

    def read(self, tape: str, drive: str | None, size: int) -> None:
        if drive is None:
            counted = self.loose_reads[tape]
            counted[0] += 1
            counted[1] += size
        else:
            self.mounts.read((tape, drive), size)

    def flush(self, session: Session) -> None:
        bulk.mounts_open_before(session, self._of_library(self.mounts.open_before_rows()))
        for tape, (count, size) in self.loose_reads.items():
            bulk.mount_reads(session, tape, None, count, size, library=self.library)
        bulk.mounts_opened(session, self._of_library(self.mounts.opened_rows()))
        bulk.recalls_changed(session, list(self.recalls.values()))
        started = [{"file_id": f, "started_at": at} for f, at in self.started.items()]
        bulk.files_started(session, [row for row in started if row["file_id"] not in self.staged])
        staged = [{**row, "started_at": self.started.get(f)} for f, row in self.staged.items()]
        bulk.files_staged(session, staged, started, self.pinning)
        self.mounts.clear()
        self.loose_reads.clear()
        self.recalls.clear()
        self.started.clear()
        self.staged.clear()

    def _of_library(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**row, "library": self.library} for row in rows]


def _apply_one(
    session: Session,
    event: Event,
    *,
    retry: RetryRule,
    report: CompletionReport,
    files: dict[int, FileNow],
    writes: _Writes,
) -> None:
    if event.kind in (EventKind.MOUNTED, EventKind.UNMOUNTED):
        _mount_event(session, event, report, writes)
        return
    if event.kind is EventKind.MOUNT_FAILED:
        return  # no mount to record; the scheduler counts them per tape (carousel.scheduler.media_states)

    file = _file_of(event, files)
    if file is None:
        report.stale.append(event.seq)
        return
    batch_key = event.batch_key or file.batch_key

    if event.kind is EventKind.FILE_STARTED:
        if batch_key is not None:
            writes.recall_started(file.id, batch_key, event.at, event.drive)
        if holds_attempt(file, event.batch_key):
            writes.started.setdefault(file.id, event.at)
        return

    end = read_end(event)
    completion = read_ended(file, end, retry)
    if end.outcome is FileState.STAGED:
        if batch_key is not None:
            writes.recall_finished(file.id, batch_key, event, end.outcome)
        if event.tape is not None:
            writes.read(event.tape, event.drive, event.bytes)
        report.bytes_staged += event.bytes
        if completion.move is not None:
            writes.staged[file.id] = {"file_id": file.id, "finished_at": event.at, "checksum": event.checksum}
            files[file.id] = replace(file, state=completion.move.target, wanted=False)
        _count(report, completion, event)
        return

    # failures and cancels are rare: what is pending goes first, then this one, on its own
    writes.flush(session)
    if batch_key is not None:
        q.recall_finished(
            session,
            file.id,
            batch_key,
            at=event.at,
            outcome=end.outcome,
            bytes_read=0,
            drive=event.drive,
            reason=event.reason,
        )
    _count(report, completion, event)
    if completion.move is None:
        return
    _write_end(session, file.id, completion.move, completion, event.at)
    now = q.file_now(session, file.id)
    if now is not None:
        files[file.id] = now


def _mount_event(session: Session, event: Event, report: CompletionReport, writes: _Writes) -> None:
    if event.tape is None:
        return
    if event.drive is None:
        # which mount it means depends on what is open in the database: what is pending goes first
        writes.flush(session)
        if event.kind is EventKind.MOUNTED:
            q.mount_opened(session, event.tape, None, event.at, library=writes.library)
        else:
            q.mount_closed(session, event.tape, None, event.at, library=writes.library)
    elif event.kind is EventKind.MOUNTED:
        writes.mounts.mounted((event.tape, event.drive), event.at)
    else:
        writes.mounts.unmounted((event.tape, event.drive), event.at)
    if event.kind is EventKind.MOUNTED:
        report.mounts += 1


def _write_end(session: Session, file_id: int, move: FileMove, completion: Completion, at: datetime) -> None:
    """A failure's or a cancel's change (`move`, of `completion`), as the completion rule decided it."""
    if move.target is FileState.QUEUED:
        q.requeue_for_retry(
            session,
            file_id,
            attempts=completion.attempts,
            not_before=completion.not_before,
            error=completion.error,
        )
        if completion.counted is Counted.RETRIED:
            log.info(
                "read failed, retrying later",
                file_id=file_id,
                attempts=completion.attempts,
                reason=completion.error,
            )
        return
    q.finish_file(session, file_id, move, at, error=completion.error, attempts=completion.attempts)


def _file_of(event: Event, files: dict[int, FileNow]) -> FileNow | None:
    if event.file_key is None or not event.file_key.isdigit():
        log.warning("event names no file of ours", seq=event.seq, kind=event.kind, file_key=event.file_key)
        return None
    return files.get(int(event.file_key))


def _count(report: CompletionReport, completion: Completion, event: Event) -> None:
    match completion.counted:
        case Counted.STAGED:
            report.staged += 1
        case Counted.RETRIED:
            report.retried += 1
        case Counted.FAILED:
            report.failed += 1
        case Counted.REQUEUED:
            report.requeued += 1
        case Counted.CANCELLED:
            report.cancelled += 1
        case Counted.STALE:
            report.stale.append(event.seq)
