"""Applies the HSM's events to the queue: file and request states, recalls, mount history.

Idempotent: each (adapter, seq) is recorded in applied_events in the same transaction as the changes it
caused, so an event delivered again (a restart, a replayed log) changes nothing. Deadlock-free with intake:
the rows the events will change are locked first, in the one lock order (carousel.db.lock_order), not in
the library's event order. An event about a file
that has since moved on (a recovered claim, a batch that was cancelled and queued again) is recorded and
otherwise ignored, except that bytes read are always counted in the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from sqlalchemy.orm import Session

from carousel.db import completion_queries as q
from carousel.db.lock_order import lock_links_and_files
from carousel.db.queue_queries import mark_requests_started
from carousel.domain.states import FileState
from hsm_adapters.base import Event, EventKind

log = structlog.get_logger(__name__)

IN_FLIGHT = frozenset({FileState.CLAIMED, FileState.SUBMITTED})


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
    lock_links_and_files(session, [int(e.file_key) for e in fresh if e.file_key and e.file_key.isdigit()])
    for event in fresh:
        _apply_one(session, event, retry, report)
    q.record_applied(session, adapter, [e.seq for e in fresh])
    report.applied = len(fresh)
    return report


def _apply_one(session: Session, event: Event, retry: RetryRule, report: CompletionReport) -> None:
    if event.kind is EventKind.MOUNTED:
        if event.tape is not None:
            q.mount_opened(session, event.tape, event.drive, event.at)
            report.mounts += 1
        return
    if event.kind is EventKind.UNMOUNTED:
        if event.tape is not None:
            q.mount_closed(session, event.tape, event.drive, event.at)
        return

    file = _file_of(session, event)
    if file is None:
        report.stale.append(event.seq)
        return
    batch_key = event.batch_key or file.batch_key
    current = file.state in IN_FLIGHT and (event.batch_key is None or event.batch_key == file.batch_key)

    if event.kind is EventKind.FILE_STARTED:
        if batch_key is not None:
            q.recall_started(session, file.id, batch_key, event.at, event.drive)
        if current:
            q.mark_file_started(session, file.id, event.at)
            mark_requests_started(session, [file.id], event.at)
        return

    outcome = {
        EventKind.FILE_STAGED: FileState.STAGED,
        EventKind.FILE_FAILED: FileState.FAILED,
        EventKind.FILE_CANCELLED: FileState.CANCELLED,
    }[event.kind]
    if batch_key is not None:
        q.recall_finished(
            session,
            file.id,
            batch_key,
            at=event.at,
            outcome=outcome,
            bytes_read=event.bytes if outcome is FileState.STAGED else 0,
            drive=event.drive,
            reason=event.reason,
        )
    if outcome is FileState.STAGED and event.tape is not None:
        q.mount_read(session, event.tape, event.drive, event.bytes)
    if outcome is FileState.STAGED:
        report.bytes_staged += event.bytes

    # A read that ended on disk is good whichever batch did it; failures and cancels only count for the
    # batch that holds the file now.
    if outcome is FileState.STAGED and file.state in IN_FLIGHT:
        q.finish_file(session, file.id, FileState.STAGED, event.at, from_states=IN_FLIGHT)
        report.staged += 1
    elif not current:
        report.stale.append(event.seq)
    elif outcome is FileState.FAILED:
        _failed(session, file, event, retry, report)
    else:
        _cancelled(session, file, event, report)


def _file_of(session: Session, event: Event) -> q.FileNow | None:
    if event.file_key is None or not event.file_key.isdigit():
        log.warning("event names no file of ours", seq=event.seq, kind=event.kind, file_key=event.file_key)
        return None
    return q.file_now(session, int(event.file_key))


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
    q.finish_file(
        session, file.id, FileState.FAILED, event.at, from_states=IN_FLIGHT, error=detail, attempts=attempts
    )
    report.failed += 1


def _cancelled(session: Session, file: q.FileNow, event: Event, report: CompletionReport) -> None:
    if file.wanted:
        # The HSM dropped a file someone still waits for: queue it again (not a failed read: no attempt).
        q.requeue_for_retry(session, file.id, attempts=file.attempts, not_before=None, error=event.reason)
        report.requeued += 1
        return
    q.finish_file(
        session,
        file.id,
        FileState.CANCELLED,
        event.at,
        from_states=IN_FLIGHT,
        error=event.reason or "cancelled",
    )
    report.cancelled += 1
