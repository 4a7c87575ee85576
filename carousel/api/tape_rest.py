"""WLCG Tape REST API v1: discovery, stage, status, cancel, delete, release and archive info, each with and
without a trailing slash, with the exact status codes real clients expect."""

from __future__ import annotations

import json
from datetime import datetime
from functools import partial
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session

from carousel.api.auth import caller_charged_in
from carousel.api.context import (
    AppContext,
    Context,
    CurrentCaller,
    DbSession,
    DbSlot,
    after_commit,
    calling,
    public_base_url,
)
from carousel.api.limits import advertised_limits, queue_quota
from carousel.api.metrics import service_metrics
from carousel.api.problems import PROBLEM_JSON, AsciiJSONResponse
from carousel.api.tape_rest_schemas import (
    ArchiveInfoOut,
    DiscoveryOut,
    PathsIn,
    StageCreated,
    StageIn,
    StageStatusOut,
)
from carousel.db.engine import transaction
from carousel.db.models import StageRequest
from carousel.domain.callers import Caller
from carousel.intake import archive_info as archive_info_case
from carousel.intake import cancel as cancel_case
from carousel.intake import release as release_case
from carousel.intake import status as status_case
from carousel.intake import submit as submit_case
from carousel.intake.activity import activity_of_targeted_metadata
from carousel.intake.model import Api, StageOrder

PREFIX = "/api/v1"
CLIENT_INFO_MAX = 1024

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"description": description, "content": {PROBLEM_JSON: {}}}
    for code, description in (
        (400, "Invalid input (problem+json naming the field)"),
        (401, "No valid credentials (WWW-Authenticate says why)"),
        (403, "The credential does not allow this (a path outside its scopes, a group not its own)"),
        (404, "No such request of the caller"),
        (413, "Body or file list over the configured limit"),
        (429, "Over a call rate or a queue quota (Retry-After says when to come back)"),
    )
}

discovery = APIRouter(tags=["WLCG Tape REST API"])
router = APIRouter(
    prefix=PREFIX, tags=["WLCG Tape REST API"], responses=_PROBLEMS, dependencies=[Depends(calling)]
)
# Routes that identify their caller themselves, inside their one worker-thread hand-over
polls = APIRouter(prefix=PREFIX, tags=["WLCG Tape REST API"], responses=_PROBLEMS)


def _epoch(when: datetime | None) -> int | None:
    return None if when is None else int(when.timestamp())


@discovery.get("/.well-known/wlcg-tape-rest-api", response_model=DiscoveryOut)
def discover(request: Request, context: Context) -> DiscoveryOut:
    settings = context.settings
    return DiscoveryOut.model_validate(
        {
            "sitename": settings.site_name,
            "description": settings.site_description,
            "endpoints": [
                {
                    "uri": public_base_url(request) + PREFIX,
                    "version": "v1",
                    "metadata": advertised_limits(settings),
                }
            ],
        }
    )


@router.post("/stage", status_code=201, response_model=StageCreated)
@router.post("/stage/", status_code=201, response_model=StageCreated, include_in_schema=False)
async def stage(
    body: StageIn,
    *,
    request: Request,
    response: Response,
    context: Context,
    caller: CurrentCaller,
    _slot: DbSlot,
) -> StageCreated:
    """Its transaction is one hand-over to a worker thread (a `def` route with a session dependency took
    three, each waiting its turn for the event loop under load)."""
    client_info = request.headers.get("clientinfo")
    limits = context.settings.limits
    targeted = [f.targetedMetadata for f in body.files[: limits.max_files_per_request_tape_rest]]
    activity = activity_of_targeted_metadata(targeted, context.settings.site_name)
    order = StageOrder(
        paths=tuple(f.path for f in body.files),
        api=Api.TAPE_REST,
        list_field="files",
        path_field="files[{}].path",
        activity=activity or "default",
        client_info=client_info[:CLIENT_INFO_MAX] if client_info else None,
        lifetimes=tuple(f.diskLifetime for f in body.files),
        lifetime_field="files[{}].diskLifetime",
    )
    submitted = await anyio.to_thread.run_sync(partial(_submit, context, caller, order))
    service_metrics(request).submitted(Api.TAPE_REST, submitted.files_total)
    response.headers["Location"] = f"{public_base_url(request)}{PREFIX}/stage/{submitted.request_id}"
    return StageCreated(requestId=submitted.request_id)


def _submit(context: AppContext, caller: Caller, order: StageOrder) -> submit_case.Submitted:
    limits = context.settings.limits
    with transaction(context.session_factory) as session:
        return submit_case.submit(
            session,
            context.adapter,
            context.clock,
            caller,
            order,
            max_files=limits.max_files_per_request_tape_rest,
            max_path_bytes=limits.max_path_length,
            quota=queue_quota(context.settings),
            buffer=context.settings.buffer,
        )


def _status_document(
    session: Session, caller: Caller, request_id: str, request: StageRequest | None = None
) -> tuple[bytes, int]:
    document = status_case.request_status_document(session, caller, request_id, request=request)
    info = document.request
    head: dict[str, Any] = {
        "id": info.id,
        "createdAt": _epoch(info.created_at),
        # Intake begins work on a request the moment it accepts it: until a file goes to tape, that is when.
        "startedAt": _epoch(info.started_at or info.created_at),
    }
    if info.completed_at is not None:
        head["completedAt"] = _epoch(info.completed_at)
    # The files come as JSON from the database: a 10,000-file status costs Python almost nothing.
    body = json.dumps(head, separators=(",", ":"))[:-1] + ',"files":' + document.files_json + "}"
    return body.encode(), info.files_total


def _status_document_apart(context: AppContext, caller: Caller, request_id: str) -> tuple[bytes, int]:
    with context.session_factory() as session, session.begin():
        return _status_document(session, caller, request_id)


def _cache_owner(caller: Caller) -> str:
    """Whose document a cached status is: the caller, and the paths its token may poll when not all (two
    tokens of one subject may see different files of one request)."""
    if caller.grants.polls_everything or caller.grants.poll is None:
        return caller.name
    areas = sorted(f"{s.prefix}{'/' if s.directory_only else ''}" for s in caller.grants.poll)
    return caller.name + "\n" + "\n".join(areas)


@polls.get("/stage/{request_id}", response_model=StageStatusOut)
@polls.get("/stage/{request_id}/", response_model=StageStatusOut, include_in_schema=False)
async def stage_status(request_id: str, request: Request, context: Context, _slot: DbSlot) -> Response:
    """Polled by every client about once a second: its work is one hand-over to a worker thread, not one per
    dependency (each costs two switches of the interpreter lock, more than the reads themselves)."""
    body = await anyio.to_thread.run_sync(partial(_stage_status, context, request, request_id))
    return Response(body, media_type="application/json")


def _stage_status(context: AppContext, request: Request, request_id: str) -> bytes:
    with (context.read_session_factory or context.session_factory)() as session:
        # charged to the rate limits in the session of the reads when its statements commit on their own
        autocommit = session if context.read_session_factory is not None else None
        caller = caller_charged_in(request, autocommit)
        # read on every call, cached or not: a document another process's cancel or delete made stale is
        # never answered (carousel.api.status_cache)
        found = status_case.status_request(session, caller, request_id)
        return context.status_cache.get_or_render(
            _cache_owner(caller),
            request_id,
            partial(_status_document, session, caller, request_id, found),
            partial(_status_document_apart, context, caller, request_id),
            version=status_case.status_version(found),
        )


@router.post("/stage/{request_id}/cancel", status_code=200, response_class=Response)
@router.post("/stage/{request_id}/cancel/", status_code=200, response_class=Response, include_in_schema=False)
def cancel(
    request_id: str, body: PathsIn, context: Context, session: DbSession, caller: CurrentCaller
) -> Response:
    cancel_case.cancel(
        session,
        context.clock,
        caller,
        request_id,
        body.paths,
        max_path_bytes=context.settings.limits.max_path_length,
    )
    after_commit(session, partial(context.status_cache.invalidate, request_id))
    return Response(status_code=200)


@router.delete("/stage/{request_id}", status_code=200, response_class=Response)
@router.delete("/stage/{request_id}/", status_code=200, response_class=Response, include_in_schema=False)
def delete(request_id: str, context: Context, session: DbSession, caller: CurrentCaller) -> Response:
    cancel_case.delete(session, context.clock, caller, request_id, buffer_on=context.settings.buffer.enabled)
    after_commit(session, partial(context.status_cache.invalidate, request_id))
    return Response(status_code=200)


@router.post("/release/{request_id}", status_code=200, response_class=Response)
@router.post("/release/{request_id}/", status_code=200, response_class=Response, include_in_schema=False)
def release(
    request_id: str, body: PathsIn, context: Context, session: DbSession, caller: CurrentCaller
) -> Response:
    """Release the paths' disk copies. An id that names none of the caller's requests (gfal2 sends
    `gfal2-placeholder-id`) releases the paths in all of the caller's requests."""
    release_case.release(
        session,
        context.clock,
        caller,
        request_id,
        body.paths,
        max_path_bytes=context.settings.limits.max_path_length,
        buffer_on=context.settings.buffer.enabled,
    )
    return Response(status_code=200)


@router.post("/archiveinfo", response_model=list[ArchiveInfoOut], response_model_exclude_none=True)
@router.post(
    "/archiveinfo/",
    response_model=list[ArchiveInfoOut],
    response_model_exclude_none=True,
    include_in_schema=False,
)
def archive_info(
    body: PathsIn, context: Context, session: DbSession, caller: CurrentCaller
) -> AsciiJSONResponse:
    limits = context.settings.limits
    entries = archive_info_case.archive_info(
        session,
        context.adapter,
        body.paths,
        max_paths=limits.max_archiveinfo_paths,
        max_path_bytes=limits.max_path_length,
        grants=caller.grants,
        buffer_on=context.settings.buffer.enabled,
    )
    answer = [
        {"path": e.path, "locality": e.locality.value}
        if e.locality is not None
        else {"path": e.path, "error": e.error}
        for e in entries
    ]
    return AsciiJSONResponse(answer)  # paths are echoed as the client wrote them
