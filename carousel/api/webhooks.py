"""Webhooks of a native request: register, list, remove (docs/api.md). Another caller's request, or a
deleted one, is not found, as everywhere in the native API."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response

from carousel.api.context import Context, CurrentCaller, DbSession, calling, public_base_url
from carousel.api.native import PREFIX, RequestId
from carousel.api.problems import PROBLEM_JSON
from carousel.api.webhook_schemas import WebhookIn, WebhookListOut, WebhookOut
from carousel.webhooks import register as webhooks_case

_PROBLEMS: dict[int | str, dict[str, Any]] = {
    code: {"description": description, "content": {PROBLEM_JSON: {}}}
    for code, description in (
        (400, "Invalid input (problem+json naming the field): a URL not allowed, over a limit"),
        (401, "No valid credentials (WWW-Authenticate says why)"),
        (403, "The credential does not allow this"),
        (404, "No such request of the caller, or no such webhook on it"),
        (409, "The request already has a webhook to this URL"),
    )
}

router = APIRouter(prefix=PREFIX, tags=["native"], responses=_PROBLEMS, dependencies=[Depends(calling)])

WebhookId = Annotated[str, Path(max_length=64)]


@router.post("/requests/{request_id}/webhooks", status_code=201, response_model=WebhookOut)
def register_webhook(
    request_id: RequestId,
    body: WebhookIn,
    *,
    request: Request,
    response: Response,
    context: Context,
    session: DbSession,
    caller: CurrentCaller,
) -> WebhookOut:
    """Tell `url` when the request is done (at once if it is done already)."""
    webhook_id = webhooks_case.register(
        session,
        context.clock,
        caller,
        request_id,
        url=body.url,
        secret=body.secret,
        settings=context.settings.webhooks,
    )
    where = f"{public_base_url(request)}{PREFIX}/requests/{request_id}/webhooks/{webhook_id}"
    response.headers["Location"] = where
    return next(
        WebhookOut.of(view)
        for view in webhooks_case.webhooks(session, caller, request_id)
        if view.id == webhook_id
    )


@router.get("/requests/{request_id}/webhooks", response_model=WebhookListOut)
def list_webhooks(request_id: RequestId, session: DbSession, caller: CurrentCaller) -> WebhookListOut:
    """The request's webhooks, each with its latest delivery."""
    views = webhooks_case.webhooks(session, caller, request_id)
    return WebhookListOut(webhooks=[WebhookOut.of(view) for view in views])


@router.delete("/requests/{request_id}/webhooks/{webhook_id}", status_code=204, response_class=Response)
def remove_webhook(
    request_id: RequestId, webhook_id: WebhookId, session: DbSession, caller: CurrentCaller
) -> Response:
    """Forget the webhook; a delivery not sent yet will not be."""
    webhooks_case.remove(session, caller, request_id, webhook_id)
    return Response(status_code=204)
