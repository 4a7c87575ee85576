"""Finding a caller's own request: another caller's request, or a deleted one, is not found. A path outside
the credential's storage scopes is answered with NOT_COVERED in place of what is known of it."""

from __future__ import annotations

import re
import uuid

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.db.models import StageRequest
from carousel.domain.callers import Caller
from carousel.domain.errors import NotFound
from carousel.domain.states import RequestState
from carousel.intake.model import RequestInfo

NOT_COVERED = "forbidden: no storage.* scope of the credential covers this path"


def is_request_id(text: str) -> bool:
    """Request ids are UUIDs in their canonical form; anything else names no request (and is not sent to
    the database, which may refuse some characters outright)."""
    if len(text) != 36:
        return False
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def may_see(caller: Caller, request: StageRequest) -> bool:
    """A live request of the caller's own, or of a group whose requests its credential shares."""
    if request.state == RequestState.DELETED.value:
        return False
    return request.owner == caller.name or request.grp in caller.grants.shared_groups


def find_owned_request(session: Session, caller: Caller, request_id: str) -> StageRequest | None:
    """The caller's live request of that id (its own or its shared groups'), or None."""
    request = q.get_request(session, request_id) if is_request_id(request_id) else None
    if request is None or not may_see(caller, request):
        return None
    return request


# What an alias may hold: safe in a URL path as it is (XRootD's request ids are hex digits, ':' and '.').
ALIAS_PATTERN = r"^[A-Za-z0-9_.:@+=-]+$"
ALIAS_MAX_LENGTH = 256
_ALIAS = re.compile(ALIAS_PATTERN)


def is_alias(text: str) -> bool:
    """Whether text has the form of an alias (anything else names no alias and is not sent to the
    database). A request id has that form too: ids are looked up first."""
    return len(text) <= ALIAS_MAX_LENGTH and _ALIAS.match(text) is not None


def resolve_request_id(session: Session, caller: Caller, name: str) -> str:
    """The id of the caller's live request that `name` is an alias of; else `name` itself (an id, or a
    name that then is not found, named as the client wrote it: whose alias it is stays unsaid)."""
    if is_request_id(name) or not is_alias(name):
        return name
    groups = tuple(caller.grants.shared_groups)
    found = [
        r for r in q.requests_of_alias(session, name, owner=caller.name, groups=groups) if may_see(caller, r)
    ]
    return found[0].id if found else name


def owned_request(session: Session, caller: Caller, request_id: str) -> StageRequest:
    request = find_owned_request(session, caller, request_id)
    if request is None:
        raise NotFound(f"no request {request_id[:80]!r}", field="id")
    return request


def request_info(request: StageRequest) -> RequestInfo:
    return RequestInfo(
        id=request.id,
        owner=request.owner,
        group=request.grp,
        activity=request.activity,
        priority=request.priority,
        api=request.api,
        state=request.state,
        files_total=request.files_total,
        created_at=request.created_at,
        started_at=request.started_at,
        completed_at=request.completed_at,
        colocation=request.colocation,
    )
