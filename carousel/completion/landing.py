"""Landing before completion: each FILE_STAGED event's bytes, written by the library into the buffer's
incoming directory, are verified and moved into the buffer (carousel.buffer.landing) before completion
applies the event, with no transaction open. An event whose bytes cannot land (missing, a checksum
mismatch, an OSError such as ENOSPC) becomes a retryable FILE_FAILED with the reason: the completion rule
retries the file on a later mount, and no row ever says bytes are in the buffer that are not.

Idempotent: an event landed before whose transaction did not commit (the cycle keeps it for the next one)
finds its bytes already in place and lands again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.landing import LandingFailed, adler32_of, discard, land, normalised_checksum
from carousel.buffer.layout import BufferLayout, UnsafePath
from carousel.db.buffer_queries import ToLand, files_to_land
from carousel.db.engine import run_transaction
from hsm_adapters.base import Event, EventKind

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class LandingReport:
    landed: int = 0
    failed: list[str] = field(default_factory=list)  # the reasons, one per failed landing


def land_staged(
    layout: BufferLayout, session_factory: sessionmaker[Session], events: Sequence[Event]
) -> tuple[list[Event], LandingReport]:
    """The events, each FILE_STAGED one of ours landed (with the checksum of its bytes) or turned into a
    retryable FILE_FAILED."""
    report = LandingReport()
    keys = [int(e.file_key) for e in events if e.file_key is not None and _stages_a_file(e)]
    if not keys:
        return list(events), report
    files = run_transaction(session_factory, lambda session: files_to_land(session, keys))
    out: list[Event] = []
    for event in events:
        if not _stages_a_file(event):
            out.append(event)
            continue
        assert event.file_key is not None
        file = files.get(int(event.file_key))
        incoming = layout.incoming_path(event.file_key)
        if file is None or not file.in_flight:
            # late or duplicate news of a read already ended: its bytes have no row to follow them
            discard(incoming)
            out.append(event)
            continue
        try:
            checksum = _land_one(layout, file, event)
        except LandingFailed as exc:
            reason = str(exc)
            log.warning("staged bytes did not land: the read is retried", file_id=file.id, reason=reason)
            report.failed.append(reason)
            out.append(
                replace(
                    event, kind=EventKind.FILE_FAILED, reason=reason, retryable=True, bytes=0, checksum=None
                )
            )
            continue
        report.landed += 1
        out.append(replace(event, checksum=checksum))
    return out, report


def _stages_a_file(event: Event) -> bool:
    return event.kind is EventKind.FILE_STAGED and event.file_key is not None and event.file_key.isdigit()


def _land_one(layout: BufferLayout, file: ToLand, event: Event) -> str:
    assert event.file_key is not None
    try:
        expected = normalised_checksum(file.checksum) or normalised_checksum(event.checksum)
        final = layout.final_path(file.path)
    except (ValueError, UnsafePath) as exc:
        raise LandingFailed(str(exc)) from exc
    incoming = layout.incoming_path(event.file_key)
    if not incoming.exists() and final.is_file():
        # landed by an earlier pass whose transaction did not commit
        got = adler32_of(final)
        if expected is None or got == expected:
            return got
    landed = land(incoming, final, expected, expected_size=file.size_bytes)
    return landed.checksum
