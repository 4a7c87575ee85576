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
from datetime import timedelta
from typing import Any

import structlog
from sqlalchemy.orm import Session

from carousel.db import completion_bulk as bulk
from carousel.db import completion_queries as q
from carousel.db.lock_order import lock_links_and_files
from carousel.domain.states import CANCEL_READ, FAIL_READ, FILE_IN_FLIGHT, FileState
from hsm_adapters.base import Event, EventKind

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RetryRule:
    """Failed reads: retried until max_attempts reads have failed, each retry after backoff_s."""

    max_attempts: int
    backoff_s: float


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
    session: Session, adapter: str, events: Sequence[Event], retry: RetryRule
) -> CompletionReport:
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
    writes = _Writes()
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

    def __init__(self) -> None:
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
            bulk.mount_reads(session, tape, drive, count, size)
        bulk.files_staged(session, self.files_staged)
        for pending in (self.recalls_started, self.files_started, self.recalls_finished, self.files_staged):
            pending.clear()
        self.mount_reads.clear()


def _apply_one(
    session: Session,
    event: Event,
    *,
    retry: RetryRule,
    report: CompletionReport,
    files: dict[int, q.FileNow],
    writes: _Writes,
) -> None:
    if event.kind is EventKind.MOUNTED:
        writes.flush(session)
        if event.tape is not None:
            q.mount_opened(session, event.tape, event.drive, event.at)
            report.mounts += 1
        return
    if event.kind is EventKind.UNMOUNTED:
        writes.flush(session)  # the mount's reads count before it closes
        if event.tape is not None:
            q.mount_closed(session, event.tape, event.drive, event.at)
        return

    file = _file_of(event, files)
    if file is None:
        report.stale.append(event.seq)
        return
    batch_key = event.batch_key or file.batch_key
    current = file.state in FILE_IN_FLIGHT and (event.batch_key is None or event.batch_key == file.batch_key)

    if event.kind is EventKind.FILE_STARTED:
        if batch_key is not None:
            writes.recalls_started.append(
                {"b_file": file.id, "b_batch": batch_key, "b_at": event.at, "b_drive": event.drive}
            )
        if current:
            writes.files_started.append({"b_file": file.id, "b_at": event.at})
        return

    if event.kind is EventKind.FILE_STAGED:
        if batch_key is not None:
            writes.recalls_finished.append(
                {
                    "b_file": file.id,
                    "b_batch": batch_key,
                    "b_at": event.at,
                    "b_outcome": FileState.STAGED.value,
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
        # A read that ended on disk is good whichever batch did it.
        if file.state in FILE_IN_FLIGHT:
            writes.files_staged.append({"b_file": file.id, "b_at": event.at})
            files[file.id] = replace(file, state=FileState.STAGED, wanted=False)
            report.staged += 1
        else:
            report.stale.append(event.seq)
        return

    # failures and cancels are rare: what is pending goes first, then this one, on its own
    writes.flush(session)
    outcome = FileState.FAILED if event.kind is EventKind.FILE_FAILED else FileState.CANCELLED
    if batch_key is not None:
        q.recall_finished(
            session,
            file.id,
            batch_key,
            at=event.at,
            outcome=outcome,
            bytes_read=0,
            drive=event.drive,
            reason=event.reason,
        )
    # failures and cancels only count for the batch that holds the file now
    if not current:
        report.stale.append(event.seq)
        return
    if outcome is FileState.FAILED:
        _failed(session, file, event, retry, report)
    else:
        _cancelled(session, file, event, report)
    now = q.file_now(session, file.id)
    if now is not None:
        files[file.id] = now


def _file_of(event: Event, files: dict[int, q.FileNow]) -> q.FileNow | None:
    if event.file_key is None or not event.file_key.isdigit():
        log.warning("event names no file of ours", seq=event.seq, kind=event.kind, file_key=event.file_key)
        return None
    return files.get(int(event.file_key))


def _failed(
    session: Session, file: q.FileNow, event: Event, retry: RetryRule, report: CompletionReport
) -> None:
    attempts = file.attempts + 1
    reason = event.reason or "the library reported a failed read without a reason"
    if file.wanted and event.retryable and attempts < retry.max_attempts:
        q.requeue_for_retry(
            session,
            file.id,
            attempts=attempts,
            not_before=event.at + timedelta(seconds=retry.backoff_s),
            error=reason,
        )
        report.retried += 1
        log.info("read failed, retrying later", file_id=file.id, attempts=attempts, reason=reason)
        return
    gave_up = event.retryable and attempts >= retry.max_attempts
    detail = f"{reason} (gave up after {attempts} attempts)" if gave_up else reason
    q.finish_file(session, file.id, FAIL_READ, event.at, error=detail, attempts=attempts)
    report.failed += 1


def _cancelled(session: Session, file: q.FileNow, event: Event, report: CompletionReport) -> None:
    if file.wanted:
        # The HSM dropped a file someone still waits for: queue it again (not a failed read: no attempt).
        q.requeue_for_retry(session, file.id, attempts=file.attempts, not_before=None, error=event.reason)
        report.requeued += 1
        return
    q.finish_file(session, file.id, CANCEL_READ, event.at, error=event.reason or "cancelled")
    report.cancelled += 1
