"""At the start of a leadership term, files already staged in the buffer are applied as staged, not handed to
the library again.

Why. A leader killed after its library wrote a file's bytes but before the FILE_STAGED event was applied
leaves the file CLAIMED or SUBMITTED with its bytes in the buffer's incoming directory (or landed, when the
landing's transaction did not commit). The next leader (a restart, or a standby taking over) would sweep the
incoming directory and hand the file to its own library again: a second read from tape of bytes that are on
disk. Instead, before the sweep and before resubmission, each in-flight file whose bytes are complete (its
size) with the right adler32 (the database's, else the library's lookup) is landed and completed by a
FILE_STAGED event of the cycle's own stream (`<stream>:bf` in applied_events). Bytes that are short, or
whose checksum cannot be known or does not match, are left to the sweep, and the file is read again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.landing import LandingFailed, adler32_of, land, normalised_checksum
from carousel.buffer.layout import BufferLayout, UnsafePath
from carousel.db.buffer_queries import InFlight, in_flight_page
from carousel.db.engine import run_transaction
from carousel.domain.clock import Clock
from hsm_adapters.base import Event, EventKind, HsmAdapter, OnTape

log = structlog.get_logger(__name__)

PAGE = 5_000
LOOKUP_CHUNK = 1_000


@dataclass(frozen=True, slots=True)
class _Found:
    file: InFlight
    bytes_at: Path  # the incoming file, or the final one when it landed already
    landed: bool


def staged_in_buffer(
    layout: BufferLayout,
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    next_seq: Callable[[], int],
) -> list[Event]:
    """FILE_STAGED events for the in-flight files whose verified bytes are in the buffer (now landed)."""
    found = _complete_bytes(layout, session_factory)
    if not found:
        return []
    expected = _checksums(found, adapter)
    now = clock.now()
    events: list[Event] = []
    for item in found:
        checksum = expected.get(item.file.id)
        if checksum is None:
            continue  # nothing to verify against: the sweep removes the bytes and the file is read again
        final = layout.final_path(item.file.path)
        try:
            if item.landed:
                if adler32_of(final) != checksum:
                    continue
            else:
                land(item.bytes_at, final, checksum, expected_size=item.file.size_bytes)
        except (LandingFailed, OSError) as exc:
            log.warning("bytes in the buffer not taken as staged", file_id=item.file.id, reason=str(exc))
            continue
        events.append(
            Event(
                kind=EventKind.FILE_STAGED,
                at=now,
                seq=next_seq(),
                file_key=str(item.file.id),
                path=item.file.path,
                batch_key=item.file.batch_key,
                bytes=item.file.size_bytes or 0,
                checksum=checksum,
            )
        )
    return events


def _complete_bytes(layout: BufferLayout, session_factory: sessionmaker[Session]) -> list[_Found]:
    found: list[_Found] = []
    after = 0
    while True:
        page = run_transaction(session_factory, functools.partial(in_flight_page, after_id=after, limit=PAGE))
        for file in page:
            if file.size_bytes is None:
                continue
            try:
                incoming = layout.incoming_path(str(file.id))
                final = layout.final_path(file.path)
            except UnsafePath:
                continue
            if _size(incoming) == file.size_bytes:
                found.append(_Found(file, incoming, landed=False))
            elif _size(final) == file.size_bytes:
                found.append(_Found(file, final, landed=True))
        if len(page) < PAGE:
            return found
        after = page[-1].id


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None


def _checksums(found: list[_Found], adapter: HsmAdapter) -> dict[int, str]:
    """Each file's expected adler32: the database's, else the library's answer to a lookup."""
    expected: dict[int, str] = {}
    unknown: list[InFlight] = []
    for item in found:
        try:
            known = normalised_checksum(item.file.checksum)
        except ValueError:
            known = None
        if known is None:
            unknown.append(item.file)
        else:
            expected[item.file.id] = known
    for start in range(0, len(unknown), LOOKUP_CHUNK):
        chunk = unknown[start : start + LOOKUP_CHUNK]
        try:
            answers = adapter.lookup([file.path for file in chunk])
        except Exception as exc:
            log.warning("lookup for checksums of bytes in the buffer failed", error=str(exc))
            continue
        for file, answer in zip(chunk, answers, strict=True):
            if isinstance(answer, OnTape) and answer.checksum is not None:
                try:
                    checksum = normalised_checksum(answer.checksum)
                except ValueError:
                    continue
                if checksum is not None:
                    expected[file.id] = checksum
    return expected
