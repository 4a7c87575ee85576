"""Applies the HSM's events to the queue: file and request states, recalls, mount history.

Idempotent: each (adapter, seq) is recorded in applied_events in the same transaction as the changes it
caused, so an event delivered again (a restart, a replayed log) changes nothing. Deadlock-free with intake:
the rows the events will change are locked first, in the one lock order (carousel.db.lock_order), not in
the library's event order. An event about a file that has since moved on (a recovered claim, a batch that
was cancelled and queued again) is recorded and otherwise ignored, except that bytes read are always counted
in the history.

Fast: a poll brings thousands of events, nearly all "started" and "on disk". The files they name are read in
one statement, decided on in memory, and the changes of those two kinds are written a few statements for the
lot (carousel.db.completion_bulk). Every other kind (mounts, failures, cancels) first writes what is
pending, then goes one by one, so each change still lands in event order where order matters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

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
    """Changes of "started" and "on disk" events not written yet, by kind, in event order within each kind.
    Written kind by kind in the order of a recall's life (started before finished), which is their event
    order: a file starts before it ends, and ends once in one library."""

    def __init__(self, pinning: Pinning | None, library: str = DEFAULT_LIBRARY) -> None:
        self.pinning = pinning
        self.library = library  # whose events these are: its mounts are its own (docs/decisions.md §15)
        self.recalls_started: list[dict[str, Any]] = []
        self.files_started: list[dict[str, Any]] = []
        self.recalls_finished: list[dict[str, Any]] = []
        self.mount_reads: dict[tuple[str, str | None], list[int]] = defaultdict(
            lambda: [0, 0]
        )  # files, bytes
        self.files_staged: list[dict[str, Any]] = []

    def flush(self, session: Session) -> None:
        bulk.recalls_started(session, self.recalls_started)
        bulk.files_started(session, self.files_started)
        bulk.recalls_finished(session, self.recalls_finished)
        for (tape, drive), (count, size) in self.mount_reads.items():
            bulk.mount_reads(session, tape, drive, count, size, library=self.library)
        bulk.files_staged(session, self.files_staged, self.pinning)
        for pending in (self.recalls_started, self.files_started, self.recalls_finished, self.files_staged):
            pending.clear()
        self.mount_reads.clear()


def _apply_one(
    session: Session,
    event: Event,
    *,
    retry: RetryRule,
    report: CompletionReport,
    files: dict[int, FileNow],
    writes: _Writes,
) -> None:
    if event.kind is EventKind.MOUNTED:
        writes.flush(session)
        if event.tape is not None:
            q.mount_opened(session, event.tape, event.drive, event.at, library=writes.library)
            report.mounts += 1
        return
    if event.kind is EventKind.UNMOUNTED:
        writes.flush(session)  # the mount's reads count before it closes
        if event.tape is not None:
            q.mount_closed(session, event.tape, event.drive, event.at, library=writes.library)
        return

    file = _file_of(event, files)
    if file is None:
        report.stale.append(event.seq)
        return
    batch_key = event.batch_key or file.batch_key

    if event.kind is EventKind.FILE_STARTED:
        if batch_key is not None:
            writes.recalls_started.append(
                {"b_file": file.id, "b_batch": batch_key, "b_at": event.at, "b_drive": event.drive}
            )
        if holds_attempt(file, event.batch_key):
            writes.files_started.append({"b_file": file.id, "b_at": event.at})
        return

    end = read_end(event)
    completion = read_ended(file, end, retry)
    if end.outcome is FileState.STAGED:
        if batch_key is not None:
            writes.recalls_finished.append(
                {
                    "b_file": file.id,
                    "b_batch": batch_key,
                    "b_at": event.at,
                    "b_outcome": end.outcome.value,
                    "b_bytes": event.bytes,
                    "b_drive": event.drive,
                    "b_reason": event.reason,
                }
            )
        if event.tape is not None:
            counted = writes.mount_reads[(event.tape, event.drive)]
            counted[0] += 1
            counted[1] += event.bytes
        report.bytes_staged += event.bytes
        if completion.move is not None:
            writes.files_staged.append({"b_file": file.id, "b_at": event.at, "b_checksum": event.checksum})
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
