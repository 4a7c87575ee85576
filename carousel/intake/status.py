"""What a caller may read about its requests: full status, pages of files, counts by state, its requests."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Hashable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.db.models import StageRequest
from carousel.domain.callers import Caller
from carousel.domain.errors import InvalidInput
from carousel.domain.grants import Grants, require_some_poll_scope
from carousel.domain.states import RequestState, TapeRestState
from carousel.intake.access import NOT_COVERED, is_request_id, owned_request, request_info
from carousel.intake.model import FilePage, FileStatus, RequestPage, RequestSummary, StatusDocument

_FINAL = {TapeRestState.COMPLETED, TapeRestState.FAILED, TapeRestState.CANCELLED}


def _file_status(row: Any, grants: Grants) -> FileStatus:
    if not grants.may_poll(row.path):
        return FileStatus(path=row.path, state=None, on_disk=False, error=NOT_COVERED)
    state = TapeRestState(row.client_state)
    return FileStatus(
        path=row.path,
        state=state,
        on_disk=bool(row.on_disk),
        error=row.error if state is TapeRestState.FAILED else None,
        started_at=row.started_at if state is not TapeRestState.SUBMITTED else None,
        finished_at=row.finished_at if state in _FINAL else None,
        checksum=row.checksum,
    )


def status_request(session: Session, caller: Caller, request_id: str) -> StageRequest:
    """The request whose status the caller asks for; refused (no poll scope, not found) as its status is."""
    require_some_poll_scope(caller.grants, "status")
    return owned_request(session, caller, request_id)


def status_version(request: StageRequest) -> Hashable:
    """What a status document of the request is valid for: it changes with every cancel or delete (in any
    API process) and when the request ends."""
    return (request.status_version, request.state, request.completed_at)


def request_status_document(
    session: Session, caller: Caller, request_id: str, *, request: StageRequest | None = None
) -> StatusDocument:
    """The request, and its files as the Tape REST API lists them (JSON rendered by the database). Pass
    `request` when status_request has found it already: one lookup a call."""
    if request is None:
        request = status_request(session, caller, request_id)
    files_json = q.status_files_json(session, request.id)
    if not caller.grants.polls_everything:
        files_json = _outside_scopes_hidden(files_json, caller.grants)
    return StatusDocument(request_info(request), files_json)


def _outside_scopes_hidden(files_json: str, grants: Grants) -> str:
    """Each file no poll scope covers carries an error instead of its state, as in archive info: a token
    for one directory learns nothing of another's files, even in a request of its owner's."""
    files = json.loads(files_json)
    shown = [f if grants.may_poll(f["path"]) else {"path": f["path"], "error": NOT_COVERED} for f in files]
    return json.dumps(shown, separators=(",", ":"))


def file_page(
    session: Session,
    caller: Caller,
    request_id: str,
    *,
    limit: int,
    cursor: str | None,
    state: TapeRestState | None,
) -> FilePage:
    """Files of the request in the client's order, at most `limit` at a time; pass back `next_cursor` for
    more. Files outside the credential's scopes carry an error instead of their state, and are left out of
    a page filtered by state."""
    require_some_poll_scope(caller.grants, "status")
    request = owned_request(session, caller, request_id)
    after = -1
    if cursor is not None:
        if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 12:  # int() reads "²" as no digit
            raise InvalidInput(f"cursor {cursor[:40]!r} is not one this service gave out", field="cursor")
        after = int(cursor)
    rows = q.link_status_page(session, request.id, after_ordinal=after, limit=limit + 1, state=state)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = str(rows[-1].ordinal) if more and rows else None
    grants = caller.grants
    if state is not None and not grants.polls_everything:
        rows = [row for row in rows if grants.may_poll(row.path)]  # being listed would tell their state
    return FilePage(tuple(_file_status(row, grants) for row in rows), next_cursor)


def summary(session: Session, caller: Caller, request_id: str) -> RequestSummary:
    require_some_poll_scope(caller.grants, "status")
    request = owned_request(session, caller, request_id)
    counts = q.client_state_counts(session, request.id)
    return RequestSummary(
        request_info(request), {state: counts.get(state.value, 0) for state in TapeRestState}
    )


def _encode_listing_cursor(created_at: datetime, request_id: str) -> str:
    raw = f"{created_at.isoformat()}|{request_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_listing_cursor(cursor: str) -> tuple[datetime, str]:
    foreign = InvalidInput(f"cursor {cursor[:40]!r} is not one this service gave out", field="cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, request_id = raw.split("|", 1)
        created_at = datetime.fromisoformat(created)
        # in UTC, as the service wrote it: year 1 or 9999 with an offset overflows here, not in the query
        in_utc = created_at.astimezone(UTC)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError):
        raise foreign from None
    if created_at.tzinfo is None or not is_request_id(request_id):
        raise foreign
    return in_utc, request_id


def list_requests(
    session: Session,
    caller: Caller,
    *,
    limit: int,
    cursor: str | None,
    states: Sequence[RequestState] = (RequestState.ACTIVE, RequestState.DONE),
) -> RequestPage:
    """The caller's requests (and those of the groups it shares), newest first."""
    require_some_poll_scope(caller.grants, "listing requests")
    before = _decode_listing_cursor(cursor) if cursor is not None else None
    rows = q.list_requests(
        session,
        owner=caller.name,
        groups=tuple(caller.grants.shared_groups),
        before=before,
        limit=limit + 1,
        states=[s.value for s in states],
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = _encode_listing_cursor(rows[-1].created_at, rows[-1].id) if more and rows else None
    return RequestPage(tuple(request_info(row) for row in rows), next_cursor)
