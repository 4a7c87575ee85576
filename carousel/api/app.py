"""The application factory. The app serves requests only: the scheduler runs beside it (carousel.cli)."""

from __future__ import annotations

from importlib.metadata import version

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from sqlalchemy.orm import Session, sessionmaker

from carousel.api import admin, admin_media, health, limits, native, staged_files, tape_rest, webhooks
from carousel.api.auth import install_auth
from carousel.api.authenticate_first import AuthenticateFirst
from carousel.api.body_limit import BodyBudget, BodyLimit
from carousel.api.context import AppContext
from carousel.api.db_errors import DatabaseErrors
from carousel.api.operations import install_operations
from carousel.api.problems import install_problem_handlers
from carousel.api.status_cache import StatusCache
from carousel.buffer.layout import BufferLayout
from carousel.config import Settings, buffer_directory
from carousel.db.engine import autocommit_session_factory
from carousel.domain.clock import Clock
from carousel.observability.metrics import ServiceMetrics
from hsm_adapters.base import HsmAdapter

DESCRIPTION = """
carousel stages files from tape to disk for many clients at once, one recall per file however many
requests name it, fed to the library tape by tape.

* **WLCG Tape REST API v1** under `/api/v1` (discovery at `/.well-known/wlcg-tape-rest-api`).
* **Native API** under `/api/native/v1`: bulk requests, priority, group and activity, paged status.
* **Operations**: `/dashboard`, reports under `/api/reports`, `/metrics`, `/healthz`, `/readyz`.
* **Admin** under `/api/admin/v1` (the admin role): the active scheduling policy, its audit trail, dry runs.

Every error is `application/problem+json` (RFC 7807) with `status`, `title`, `detail` and, when one field
is at fault, `field`.
"""


def create_app(
    settings: Settings,
    *,
    adapter: HsmAdapter,
    clock: Clock,
    session_factory: sessionmaker[Session],
    metrics: ServiceMetrics | None = None,
) -> FastAPI:
    # Swagger UI and ReDoc with their scripts and styles served by the service itself (a packaged copy under
    # /static-offline-docs), not from a CDN: /docs works on a site without internet access.
    app = FastAPIOffline(
        title="carousel",
        version=version("carousel"),
        description=DESCRIPTION,
        redirect_slashes=False,  # gfal2 posts to /stage/ and /archiveinfo/: both forms are served as they are
        strict_content_type=False,  # clients that send JSON without a Content-Type are still understood
    )
    status_cache = StatusCache(ttl_s=settings.status_cache_s, min_files=settings.status_cache_min_files)
    app.state.context = AppContext(
        settings=settings,
        adapter=adapter,
        clock=clock,
        session_factory=session_factory,
        status_cache=status_cache,
        read_session_factory=autocommit_session_factory(session_factory),
    )
    install_auth(app.state, settings, clock, session_factory)
    install_problem_handlers(app)
    app.include_router(health.router)
    app.include_router(tape_rest.discovery)
    app.include_router(tape_rest.polls)
    app.include_router(tape_rest.router)
    app.include_router(native.router)
    app.include_router(webhooks.router)
    app.include_router(limits.router)
    app.include_router(admin.router)
    app.include_router(admin_media.router)
    app.add_middleware(DatabaseErrors)  # inside BodyLimit: it replays bodies already within the limit
    app.add_middleware(
        BodyLimit,
        max_body_bytes=settings.limits.max_body_bytes,
        timeout_s=settings.http.body_timeout_s,
        budget=BodyBudget(settings.http.max_buffered_body_bytes),
    )
    app.add_middleware(AuthenticateFirst)  # outside BodyLimit: who calls is known before the body is read
    install_operations(app, metrics)  # last: its request-id middleware wraps every other one
    if settings.buffer.enabled:
        # the staged files' bytes at their paths: a catch-all, after every other route (docs/data-path.md)
        app.state.buffer_layout = BufferLayout.at(buffer_directory(settings))
        app.include_router(staged_files.router)
    return app
