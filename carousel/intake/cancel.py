"""Cancel and delete. One requester's cancel ends its own claim on a file; the recall itself stops only when
nobody else waits for it (at once while it is queued; claimed or submitted ones are cancelled by the
scheduler, which asks the library)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import InvalidInput
from carousel.domain.grants import require_some_stage_scope, require_stage
from carousel.intake.access import owned_request
from carousel.intake.paths import normalise_paths


def distinct_paths(raw_paths: Sequence[str], *, field: str, max_path_bytes: int) -> list[str]:
    """The paths normalised, each once, in the client's order; at least one."""
    if not raw_paths:
        raise InvalidInput(f"{field}: at least one path is needed", field=field)
    return list(dict.fromkeys(normalise_paths(raw_paths, max_bytes=max_path_bytes, field=field + "[{}]")))


def paths_of_request(
    session: Session, request_id: str, raw_paths: Sequence[str], *, field: str, max_path_bytes: int
) -> list[str]:
    """The paths normalised; InvalidInput (and so no change at all) unless every one is in the request."""
    paths = distinct_paths(raw_paths, field=field, max_path_bytes=max_path_bytes)
    known = q.paths_in_request(session, request_id, paths)
    missing = [path for path in paths if path not in known]
    if missing:
        shown = ", ".join(repr(path) for path in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InvalidInput(
            f"{field}: {len(missing)} path(s) are not in request {request_id}: {shown}{more}", field=field
        )
    return paths


def selected_paths(
    session: Session, request_id: str, raw_paths: Sequence[str] | None, *, field: str, max_path_bytes: int
) -> list[str] | None:
    """None (every file of the request) or the named paths, each checked to be in the request."""
    if raw_paths is None:
        return None
    return paths_of_request(session, request_id, raw_paths, field=field, max_path_bytes=max_path_bytes)


def require_stage_of(
    session: Session, caller: Caller, request_id: str, paths: Sequence[str] | None, *, field: str
) -> None:
    """Cancelling, releasing or deleting files changes what is staged: the stage scopes must cover each
    path named, or every path of the request when none is named. Forbidden (nothing changes) otherwise."""
    if caller.grants.stages_everything:
        return
    require_stage(
        caller.grants, q.request_paths(session, request_id) if paths is None else paths, field=field
    )


def cancel(
    session: Session,
    clock: Clock,
    caller: Caller,
    request_id: str,
    raw_paths: Sequence[str] | None,
    *,
    field: str = "paths",
    max_path_bytes: int,
) -> None:
    """Cancel the named files of the caller's request (None: all of them)."""
    require_some_stage_scope(caller.grants, "cancel")
    request = owned_request(session, caller, request_id)
    paths = selected_paths(session, request.id, raw_paths, field=field, max_path_bytes=max_path_bytes)
    require_stage_of(session, caller, request.id, paths, field=field)
    now = clock.now()
    file_ids = q.cancel_links(session, request.id, paths, now)
    q.settle_abandoned_files(session, file_ids, now)
    q.finish_request_if_done(session, request.id, now)
    q.bump_status_version(session, request.id)


def delete(
    session: Session, clock: Clock, caller: Caller, request_id: str, *, buffer_on: bool = False
) -> None:
    """Cancel what is left, give up the request's disk copies (its pins, with the disk buffer on: the
    scheduler evicts what no pin holds), and hide it from its owner."""
    require_some_stage_scope(caller.grants, "delete")
    request = owned_request(session, caller, request_id)
    require_stage_of(session, caller, request.id, None, field="id")
    now = clock.now()
    file_ids = q.cancel_links(session, request.id, None, now)
    q.settle_abandoned_files(session, file_ids, now)
    released = q.release_links(session, owner=caller.name, request_id=request.id, paths=None, now=now)
    if not buffer_on:
        q.drop_unwanted_disk_copies(session, released)
    q.mark_request_deleted(session, request.id, now)
