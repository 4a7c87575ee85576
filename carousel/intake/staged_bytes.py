"""Reading a staged file's bytes: which file in the buffer a client's URL names, whether the caller may read
it, and what to answer when it is not on disk.

Read access is decided here (`may_read_bytes`), and only here: the read grant of the caller's credential
(`storage.read`, or `storage.stage` as its superset; see docs/decisions.md §11).

A row that says the bytes are on disk while the file is gone (deleted behind carousel's back) is marked not
on disk in a transaction of its own, logged, and answered 409 like any file on tape only: never served as
staged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.buffer.layout import BufferLayout, UnsafePath
from carousel.db import buffer_queries as q
from carousel.db.engine import run_transaction
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, Forbidden, InvalidInput, NotFound
from carousel.domain.grants import Grants
from carousel.domain.states import FileState
from carousel.intake.paths import normalise_path

log = structlog.get_logger(__name__)

HOW_TO_STAGE = (
    'stage it first: POST /api/v1/stage with {{"files": [{{"path": "{path}"}}]}} (or gfal-bringonline, '
    "or the native API), then read it once its state is COMPLETED"
)


@dataclass(frozen=True, slots=True)
class StagedBytes:
    path: str  # the logical path
    file: Path  # where its bytes are in the buffer
    checksum: str | None  # adler32, when known


def may_read_bytes(grants: Grants, path: str) -> bool:
    """Whether a caller may read a staged file's bytes: where its credential may read."""
    return grants.may_read(path)


def staged_bytes(
    session_factory: sessionmaker[Session],
    clock: Clock,
    caller: Caller,
    layout: BufferLayout,
    raw_path: str,
    *,
    max_path_bytes: int,
) -> StagedBytes:
    """The staged file at `raw_path`, made the most recently used; NotFound (unknown to carousel),
    Conflict (known, not on disk), Forbidden, or InvalidInput (a malformed path)."""
    try:
        path = normalise_path(raw_path, max_bytes=max_path_bytes)
        final = layout.final_path(path)
    except (InvalidInput, UnsafePath) as exc:
        raise InvalidInput(f"path: {exc}", field="path") from None
    if not may_read_bytes(caller.grants, path):
        raise Forbidden(f"path: no storage.stage scope of the credential covers {path[:200]!r}", field="path")
    now = clock.now()

    def find(session: Session) -> tuple[int, str, bool, str | None] | None:
        found = q.on_disk_of_path(session, path)
        if found is not None and found[2] and final.is_file():
            q.touch(session, found[0], now)
        return found

    found = run_transaction(session_factory, find)
    if found is None:
        raise NotFound(f"{path} is not a file carousel knows: {HOW_TO_STAGE.format(path=path)}")
    file_id, state, on_disk, checksum = found
    if on_disk and not final.is_file():
        if run_transaction(session_factory, lambda session: q.mark_missing(session, file_id)):
            log.warning("staged file missing from the buffer: marked not on disk", file_id=file_id, path=path)
        on_disk = False
    if not on_disk:
        where = (
            "is on tape only" if state == FileState.STAGED.value else f"is not on disk (its recall: {state})"
        )
        raise Conflict(f"{path} {where}: {HOW_TO_STAGE.format(path=path)}")
    return StagedBytes(path, final, checksum)
