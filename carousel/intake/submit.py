"""Submit: validate a stage order, ask the library where its files are, and queue it in one transaction.

One row per path in `files`: a path another request already waits for is joined, not recalled again; a
path whose last recall ended (and is not on disk) is queued anew. The library is asked before the first
SQL statement, so no database lock is held while it answers.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.db import intake_queries as q
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput, TooLarge
from carousel.domain.grants import require_group, require_stage
from carousel.domain.states import FileState
from carousel.intake.model import StageOrder
from carousel.intake.paths import normalise_paths
from carousel.intake.quota import QueueQuota, admit
from hsm_adapters.base import HsmAdapter, LookupResult, NotOnTape, OnTape, Unknown

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Submitted:
    request_id: str
    files_total: int  # distinct paths after normalisation


def _lookup(adapter: HsmAdapter, paths: Sequence[str]) -> list[LookupResult]:
    """The library's answers; when it cannot answer at all, every file waits UNRESOLVED (the scheduler asks
    again) rather than the request being refused."""
    try:
        results = adapter.lookup(paths)
    except Exception as exc:
        log.warning("lookup of %d paths failed: %s", len(paths), exc)
        return [Unknown(path, f"the library did not answer: {exc}") for path in paths]
    if len(results) != len(paths):
        log.warning("lookup answered %d of %d paths", len(results), len(paths))
        return [Unknown(path, "the library answered for other paths") for path in paths]
    return results


def _new_file(ordinal: int, path: str, answer: LookupResult) -> q.NewFile:
    if isinstance(answer, OnTape):
        state = FileState.STAGED if answer.on_disk else FileState.QUEUED
        return q.NewFile(
            path, ordinal, state, answer.tape, answer.position_bytes, answer.size_bytes, None, answer.on_disk
        )
    if isinstance(answer, NotOnTape):
        return q.NewFile(path, ordinal, FileState.FAILED, None, None, None, answer.reason, False)
    return q.NewFile(path, ordinal, FileState.UNRESOLVED, None, None, None, answer.reason, False)


def validated_paths(order: StageOrder, *, max_files: int, max_path_bytes: int) -> list[str]:
    """The order's paths normalised and deduplicated, in the client's order."""
    if not order.paths:
        raise InvalidInput(f"{order.list_field}: at least one file is needed", field=order.list_field)
    if len(order.paths) > max_files:
        raise TooLarge(
            f"{order.list_field}: {len(order.paths)} files, the limit is {max_files} per request",
            field=order.list_field,
        )
    normalised = normalise_paths(order.paths, max_bytes=max_path_bytes, field=order.path_field)
    return list(dict.fromkeys(normalised))


def submit(
    session: Session,
    adapter: HsmAdapter,
    clock: Clock,
    caller: Caller,
    order: StageOrder,
    *,
    max_files: int,
    max_path_bytes: int,
    quota: QueueQuota | None = None,
) -> Submitted:
    """Queue the order. Nothing is written when the order is refused: bad input (400, 413), a path or a
    group the caller's credential does not allow (403), a queue quota reached (429)."""
    paths = validated_paths(order, max_files=max_files, max_path_bytes=max_path_bytes)
    require_stage(caller.grants, paths, field=order.list_field)
    group = order.group or caller.default_group
    require_group(caller.grants, caller.groups, group)
    if quota is not None and quota.active:
        admit(session, caller, group, len(paths), quota)
    # Aliases are the caller's own: another caller's never conflict (nor show through a 409).
    if order.alias is not None and q.requests_of_alias(session, order.alias, owner=caller.name):
        raise Conflict(f"alias {order.alias!r} already names a request of yours", field="alias")
    answers = _lookup(adapter, paths)
    found = [_new_file(i, path, answer) for i, (path, answer) in enumerate(zip(paths, answers, strict=True))]

    now = clock.now()
    request_id = str(uuid.uuid4())
    q.insert_request(
        session,
        request_id=request_id,
        owner=caller.name,
        group=group,
        activity=order.activity,
        priority=order.priority,
        api=order.api.value,
        files_total=len(paths),
        client_info=order.client_info,
        now=now,
        colocation=order.colocation,
    )
    if order.alias is not None and not q.insert_alias(session, caller.name, order.alias, request_id):
        raise Conflict(f"alias {order.alias!r} already names a request of yours", field="alias")
    q.queue_files(session, request_id, found, group=group, priority=order.priority, now=now)
    q.finish_request_if_done(session, request_id, now)
    return Submitted(request_id, len(paths))
