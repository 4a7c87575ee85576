"""Release: the caller no longer needs the disk copies of these files: its pins on them are dropped.

An id that names none of the caller's live requests (gfal2 sends `gfal2-placeholder-id` when its user gave
none) releases the paths in every request of the caller: release is about files, and a client that lost
or never had the id must still be able to let go of them. A known id keeps the Tape REST API's rule: every
path must be in that request, or nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.grants import require_some_stage_scope, require_stage
from carousel.intake.access import find_owned_request, owned_request
from carousel.intake.cancel import distinct_paths, paths_of_request, require_stage_of, selected_paths


def release(
    session: Session,
    clock: Clock,
    caller: Caller,
    request_id: str,
    raw_paths: Sequence[str],
    *,
    field: str = "paths",
    max_path_bytes: int,
    buffer_on: bool = False,
) -> None:
    require_some_stage_scope(caller.grants, "release")
    known = find_owned_request(session, caller, request_id) is not None
    if known:
        paths = paths_of_request(session, request_id, raw_paths, field=field, max_path_bytes=max_path_bytes)
    else:
        paths = distinct_paths(raw_paths, field=field, max_path_bytes=max_path_bytes)
    require_stage(caller.grants, paths, field=field)
    now = clock.now()
    file_ids = q.release_links(
        session, owner=caller.name, request_id=request_id if known else None, paths=paths, now=now
    )
    _after_release(session, file_ids, buffer_on)


def release_request(
    session: Session,
    clock: Clock,
    caller: Caller,
    request_id: str,
    raw_paths: Sequence[str] | None,
    *,
    field: str = "paths",
    max_path_bytes: int,
    buffer_on: bool = False,
) -> None:
    """Release files of one of the caller's requests (None: all of them); an unknown id is not found."""
    require_some_stage_scope(caller.grants, "release")
    request = owned_request(session, caller, request_id)
    paths = selected_paths(session, request.id, raw_paths, field=field, max_path_bytes=max_path_bytes)
    require_stage_of(session, caller, request.id, paths, field=field)
    file_ids = q.release_links(
        session, owner=caller.name, request_id=request.id, paths=paths, now=clock.now()
    )
    _after_release(session, file_ids, buffer_on)


def _after_release(session: Session, file_ids: list[int], buffer_on: bool) -> None:
    """Without the disk buffer a file nobody wants is marked off disk here. With it, the links released no
    longer pin their files, and the scheduler's buffer upkeep evicts a file no pin holds (with
    evict_on_release at its next cycle, else when space is needed): one process deletes bytes."""
    if not buffer_on:
        q.drop_unwanted_disk_copies(session, file_ids)
