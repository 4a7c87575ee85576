"""The native API: what the Tape REST standard lacks. Bulk requests up to the native limit, priority, group
and activity, paged per-file status, counts by state, and the caller's own requests."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Query, Request, Response

from carousel.api.context import (
    AppContext,
    Context,
    CurrentCaller,
    DbSession,
    DbSlot,
    after_commit,
    calling,
    db_slot,
    public_base_url,
)
from carousel.api.limits import queue_quota
from carousel.api.metrics import service_metrics
from carousel.api.native_schemas import (
    FileOut,
    FilePageOut,
    OutlookOut,
    PathsIn,
    RequestListOut,
    RequestOut,
    SubmitIn,
    SubmitOut,
    SummaryOut,
)
from carousel.api.outlook import outlook_of
from carousel.api.problems import PROBLEM_JSON
from carousel.db.engine import transaction
from carousel.db.outlook_queries import request_work
from carousel.domain.callers import Caller
from carousel.domain.states import RequestState, TapeRestState
from carousel.intake import cancel as cancel_case
from carousel.intake import release as release_case
from carousel.intake import status as status_case
from carousel.intake import submit as submit_case
from carousel.intake.access import resolve_request_id
from carousel.intake.model import Api, RequestSummary, StageOrder
from carousel.webhooks import register as webhooks_case

PREFIX = "/api/native/v1"

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

router = APIRouter(prefix=PREFIX, tags=["native"], responses=_PROBLEMS, dependencies=[Depends(calling)])


def _resolved_request_id(request_id: str, session: DbSession, caller: CurrentCaller) -> str:
    """The `{request_id}` of a route, an alias given at submit replaced by the request's id."""
    return resolve_request_id(session, caller, request_id)


RequestId = Annotated[str, Depends(_resolved_request_id)]


def _summary_out(summary: RequestSummary) -> SummaryOut:
    return SummaryOut(request=RequestOut.of(summary.request), counts=dict(summary.counts))


@router.post("/requests", status_code=201, response_model=SubmitOut)
async def submit(
    body: SubmitIn,
    *,
    request: Request,
    response: Response,
    context: Context,
    caller: CurrentCaller,
    _slot: DbSlot,
) -> SubmitOut:
    """Its transaction is one hand-over to a worker thread, as the Tape REST stage's (a `def` route with a
    session dependency took three, each waiting its turn for the event loop under load)."""
    order = StageOrder(
        paths=tuple(body.paths),
        api=Api.NATIVE,
        list_field="paths",
        path_field="paths[{}]",
        priority=body.priority,
        group=body.group,
        activity=body.activity,
        alias=body.alias,
        colocation=body.colocation,
        lifetimes=() if body.lifetime is None else (body.lifetime,) * len(body.paths),
        lifetime_field="lifetime",
    )
    out = await anyio.to_thread.run_sync(partial(_submit, context, caller, order, body))
    service_metrics(request).submitted(Api.NATIVE, out.files_total)
    response.headers["Location"] = f"{public_base_url(request)}{PREFIX}/requests/{out.id}"
    return out


def _submit(context: AppContext, caller: Caller, order: StageOrder, body: SubmitIn) -> SubmitOut:
    limits = context.settings.limits
    webhooks = context.settings.webhooks
    if body.webhook is not None:  # refused before anything is written
        webhooks_case.check_webhook(body.webhook.url, body.webhook.secret, webhooks, field="webhook")
    with transaction(context.session_factory) as session:
        submitted = submit_case.submit(
            session,
            context.adapter,
            context.clock,
            caller,
            order,
            max_files=limits.max_files_per_request_native,
            max_path_bytes=limits.max_path_length,
            quota=queue_quota(context.settings),
            buffer=context.settings.buffer,
        )
        webhook_id = None
        if body.webhook is not None:
            webhook_id = webhooks_case.register(
                session,
                context.clock,
                caller,
                submitted.request_id,
                url=body.webhook.url,
                secret=body.webhook.secret,
                settings=webhooks,
                field="webhook",
            )
    return SubmitOut(id=submitted.request_id, files_total=submitted.files_total, webhook_id=webhook_id)


@router.get("/requests", response_model=RequestListOut)
def list_requests(
    context: Context,
    session: DbSession,
    caller: CurrentCaller,
    limit: Annotated[int, Query(ge=1, description="at most limits.max_requests_listed")] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> RequestListOut:
    limit = min(limit, context.settings.limits.max_requests_listed)
    page = status_case.list_requests(session, caller, limit=limit, cursor=cursor)
    return RequestListOut(requests=[RequestOut.of(r) for r in page.requests], next_cursor=page.next_cursor)


@router.get("/requests/{request_id}", response_model=SummaryOut)
def get_request(
    request_id: str,
    request: Request,
    context: Context,
    caller: CurrentCaller,
    _slot: Annotated[None, Depends(db_slot, scope="function")],
) -> SummaryOut:
    """The request, its files by state and, while it is active, its outlook (position, eta, why it waits).
    The summary is read in a transaction of its own, ended before the outlook's projection opens another
    (SQLite takes one writer at a time, and the snapshot writes its fold)."""
    with transaction(context.session_factory) as session:
        resolved = resolve_request_id(session, caller, request_id)
        summary = _summary_out(status_case.summary(session, caller, resolved))
        active = summary.request.state == RequestState.ACTIVE.value
        # the request's own pending work, read here: one transaction a call rather than two
        work = request_work(session, resolved, context.clock.now()) if active else None
    if work is not None:
        found = outlook_of(request, resolved, summary.request.created_at, work)
        summary.outlook = OutlookOut.of(found) if found is not None else None
    return summary


@router.get("/requests/{request_id}/files", response_model=FilePageOut)
def list_files(
    request_id: RequestId,
    *,
    context: Context,
    session: DbSession,
    caller: CurrentCaller,
    limit: Annotated[int, Query(ge=1, description="at most limits.max_page_size")] = 1000,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
    state: TapeRestState | None = None,
) -> FilePageOut:
    limit = min(limit, context.settings.limits.max_page_size)
    page = status_case.file_page(session, caller, request_id, limit=limit, cursor=cursor, state=state)
    return FilePageOut(files=[FileOut.of(f) for f in page.files], next_cursor=page.next_cursor)


@router.post("/requests/{request_id}/cancel", response_model=SummaryOut)
def cancel(
    request_id: RequestId,
    context: Context,
    session: DbSession,
    caller: CurrentCaller,
    body: PathsIn | None = None,
) -> SummaryOut:
    paths = body.paths if body is not None else None
    limits = context.settings.limits
    cancel_case.cancel(
        session, context.clock, caller, request_id, paths, max_path_bytes=limits.max_path_length
    )
    after_commit(session, partial(context.status_cache.invalidate, request_id))
    return _summary_out(status_case.summary(session, caller, request_id))


@router.post("/requests/{request_id}/release", response_model=SummaryOut)
def release(
    request_id: RequestId,
    context: Context,
    session: DbSession,
    caller: CurrentCaller,
    body: PathsIn | None = None,
) -> SummaryOut:
    paths = body.paths if body is not None else None
    limits = context.settings.limits
    release_case.release_request(
        session,
        context.clock,
        caller,
        request_id,
        paths,
        max_path_bytes=limits.max_path_length,
        buffer_on=context.settings.buffer.enabled,
    )
    return _summary_out(status_case.summary(session, caller, request_id))


@router.delete("/requests/{request_id}", status_code=200, response_class=Response)
def delete(request_id: RequestId, context: Context, session: DbSession, caller: CurrentCaller) -> Response:
    cancel_case.delete(session, context.clock, caller, request_id, buffer_on=context.settings.buffer.enabled)
    after_commit(session, partial(context.status_cache.invalidate, request_id))
    return Response(status_code=200)
