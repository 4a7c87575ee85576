"""`GET /dashboard`: the operators' page, rendered on the server from one read-only session."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from carousel.api.context import Context
from carousel.dashboard.render import render_dashboard
from carousel.dashboard.view import build_dashboard
from carousel.scheduler.cycle import buffer_limits
from carousel.scheduler.planning_path import published_costs

router = APIRouter(tags=["operations"])

REFRESH_S = 60


@router.get("/dashboard", response_class=HTMLResponse)
def dashboard(context: Context) -> HTMLResponse:
    """The queue, the tapes with work, the library now, the disk buffer, the last day's throughput, recent
    policy changes."""
    now = context.clock.now()
    costs = published_costs(context.adapter)
    with context.session_factory() as session:  # read only: nothing to commit
        view = build_dashboard(
            session,
            context.adapter,
            now,
            costs,
            site=context.settings.site_name,
            buffer=buffer_limits(context.settings) if context.settings.buffer.enabled else None,
        )
    return HTMLResponse(render_dashboard(view, refresh_s=REFRESH_S))
