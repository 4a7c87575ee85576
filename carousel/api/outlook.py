"""The API process's outlook of the queue: the app's one shared projection (carousel.outlook.shared), made
under the active policy from the live snapshot of each library (carousel.outlook.site), and a request's
outlook read off it (docs/api.md, "Outlook")."""

from __future__ import annotations

import threading
from datetime import datetime

from fastapi import Request

from carousel.api.context import AppContext, app_context
from carousel.domain.queue import RequestWork
from carousel.outlook.live import outlook_now
from carousel.outlook.request_outlook import RequestOutlook
from carousel.outlook.shared import SharedProjection
from carousel.outlook.site import SiteProjection, project_site
from carousel.policy_admin.active import ActivePolicy
from carousel.policy_admin.validation import built_policy

_MADE = threading.Lock()


def shared_projection(request: Request) -> SharedProjection[SiteProjection]:
    """The app's shared projection, made on first use."""
    state = request.app.state
    with _MADE:
        shared: SharedProjection[SiteProjection] | None = getattr(state, "outlook", None)
        if shared is None:
            context = app_context(request)
            active = ActivePolicy(context.settings, context.session_factory)
            shared = state.outlook = SharedProjection(
                lambda: _projected(context, active),
                clock=context.clock,
                refresh_s=context.settings.outlook_refresh_s,
            )
    return shared


def _projected(context: AppContext, active: ActivePolicy) -> SiteProjection:
    """The live queue under the active policy, read once (every library plans under the same one)."""
    choice = active.read().choice
    return project_site(
        context.settings,
        context.session_factory,
        context.adapter,
        context.clock,
        lambda: built_policy(choice),
    )


def outlook_of(
    request: Request, request_id: str, created_at: datetime, work: RequestWork | None = None
) -> RequestOutlook | None:
    """The request's outlook (carousel.outlook.live.outlook_now) from the app's shared projection; `work`
    when the route has read the request's pending work already."""
    context = app_context(request)
    return outlook_now(
        shared_projection(request),
        context.session_factory,
        context.clock,
        request_id,
        created_at,
        work=work,
    )
