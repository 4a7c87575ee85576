"""Submit: validate a stage order, ask the library where its files are, and queue it in one transaction.

One row per path in `files`: a path another request already waits for is joined, not recalled again; a
path whose last recall ended (and is not on disk) is queued anew. With queue quotas on, the quotas are
checked before the library is asked (a refusal costs it nothing) and again after, holding the caller's and
the group's quota locks until the transaction commits (intake/quota.py): no lock is held while it answers
on PostgreSQL. Without quotas or an alias the library is asked before the first SQL statement.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from carousel.buffer.landing import normalised_checksum
from carousel.config import BufferSettings
from carousel.db import intake_queries as q
from carousel.domain.buffer import BufferLimits
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput, TooLarge
from carousel.domain.grants import require_group, require_stage
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.states import FileState
from carousel.intake.lifetimes import lifetime_seconds
from carousel.intake.model import StageOrder
from carousel.intake.paths import normalise_paths
from carousel.intake.quota import QueueQuota, admit, hold_quotas
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


def _new_file(
    ordinal: int, path: str, answer: LookupResult, lifetime_s: int, *, buffer: BufferLimits | None
) -> q.NewFile:
    """How a new recall of `path` starts. With the disk buffer on, a disk copy the library keeps is not one
    clients can read here: the file is recalled into the buffer; and a file larger than the buffer can ever
    hold fails at once, with the reason (it would wait for space for ever)."""
    buffer_on = buffer is not None
    too_big = buffer.too_big_reason(answer.size_bytes) if buffer and isinstance(answer, OnTape) else None
    if isinstance(answer, OnTape) and too_big is not None:
        return q.NewFile(
            path,
            ordinal,
            FileState.FAILED,
            answer.tape,
            answer.position_bytes,
            answer.size_bytes,
            too_big,
            False,
            _checksum(answer.checksum),
            lifetime_s,
            answer.library or DEFAULT_LIBRARY,
        )
    if isinstance(answer, OnTape):
        on_disk = answer.on_disk and not buffer_on
        state = FileState.STAGED if on_disk else FileState.QUEUED
        checksum = _checksum(answer.checksum)
        return q.NewFile(
            path,
            ordinal,
            state,
            answer.tape,
            answer.position_bytes,
            answer.size_bytes,
            None,
            on_disk,
            checksum,
            lifetime_s,
            answer.library or DEFAULT_LIBRARY,
        )
    if isinstance(answer, NotOnTape):
        return q.NewFile(
            path, ordinal, FileState.FAILED, None, None, None, answer.reason, False, None, lifetime_s
        )
    return q.NewFile(
        path, ordinal, FileState.UNRESOLVED, None, None, None, answer.reason, False, None, lifetime_s
    )


def _checksum(given: str | None) -> str | None:
    """The library's adler32 as 8 hex digits; one it gives malformed is not kept (the bytes give it)."""
    try:
        return normalised_checksum(given)
    except ValueError:
        log.warning("lookup gave a malformed checksum: %r", given)
        return None


def lifetimes_of(
    order: StageOrder, paths: Sequence[str], buffer: BufferSettings, *, max_path_bytes: int
) -> list[int]:
    """Each distinct path's lifetime in seconds (the longest asked for a path named twice), checked before
    anything is written."""
    if not order.lifetimes:
        default = lifetime_seconds(
            None, field=order.lifetime_field, default_s=buffer.default_lifetime_s, max_s=buffer.max_lifetime_s
        )
        return [default] * len(paths)
    if len(order.lifetimes) != len(order.paths):
        raise ValueError("a stage order's lifetimes must match its paths")
    by_path: dict[str, int] = {}
    normalised = normalise_paths(order.paths, max_bytes=max_path_bytes, field=order.path_field)
    for index, (path, value) in enumerate(zip(normalised, order.lifetimes, strict=True)):
        field = order.lifetime_field.format(index)
        seconds = lifetime_seconds(
            value, field=field, default_s=buffer.default_lifetime_s, max_s=buffer.max_lifetime_s
        )
        by_path[path] = max(seconds, by_path.get(path, 0))
    return [by_path[path] for path in paths]


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
    buffer: BufferSettings | None = None,
) -> Submitted:
    """Queue the order. Nothing is written when the order is refused: bad input (400, 413), a path or a
    group the caller's credential does not allow (403), a queue quota reached (429)."""
    paths = validated_paths(order, max_files=max_files, max_path_bytes=max_path_bytes)
    buffer = buffer or BufferSettings(enabled=False)
    lifetimes = lifetimes_of(order, paths, buffer, max_path_bytes=max_path_bytes)
    require_stage(caller.grants, paths, field=order.list_field)
    group = order.group or caller.default_group
    require_group(caller.grants, caller.groups, group)
    if quota is not None and quota.active:
        admit(session, caller, group, len(paths), quota)  # early: a refusal costs the library nothing
    # Aliases are the caller's own: another caller's never conflict (nor show through a 409).
    if order.alias is not None and q.requests_of_alias(session, order.alias, owner=caller.name):
        raise Conflict(f"alias {order.alias!r} already names a request of yours", field="alias")
    answers = _lookup(adapter, paths)
    found = [
        _new_file(i, path, answer, lifetime, buffer=buffer.limits() if buffer.enabled else None)
        for i, (path, answer, lifetime) in enumerate(zip(paths, answers, lifetimes, strict=True))
    ]
    if quota is not None and quota.active:
        # counted again holding the caller's and the group's quota locks until commit: submits racing each
        # other are admitted one after the other, each seeing the files of those before it
        hold_quotas(session, caller, group, quota)
        admit(session, caller, group, len(paths), quota)

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
    pending = q.queue_files(session, request_id, found, group=group, priority=order.priority, now=now)
    if buffer.enabled:  # files already on disk that this request joins become the most recently used
        q.touch_files_of_request(session, request_id, now)
    if not pending:  # every file was on disk already, or failed at once
        q.finish_request_if_done(session, request_id, now)
    return Submitted(request_id, len(paths))
