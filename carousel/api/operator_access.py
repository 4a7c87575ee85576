"""Who may read the operators' pages (reports, the dashboard): anyone while anonymous access is on, as for
the rest of the service; the admin role once it is off. /metrics stays open to scrapers either way
(docs/admin.md says why and how to close it)."""

from __future__ import annotations

from fastapi import Request

from carousel.api.auth import current_caller, require_admin
from carousel.api.context import app_context


def operators_only(request: Request) -> None:
    if app_context(request).settings.anonymous:
        return
    require_admin(current_caller(request))
