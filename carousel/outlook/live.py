"""The outlook of the live queue: the queue projected under a policy from the scheduler's own snapshot, and a
request's outlook read off the shared projection (carousel.outlook.shared), each library's on a site of
several (carousel.outlook.site)."""

from __future__ import annotations

from datetime import datetime

import structlog
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.engine import transaction
from carousel.db.outlook_queries import request_work
from carousel.domain.clock import Clock
from carousel.domain.queue import RequestWork
from carousel.outlook.projection import Projection, project
from carousel.outlook.request_outlook import RequestOutlook
from carousel.outlook.shared import SharedProjection
from carousel.outlook.site import SiteProjection, site_request_outlook
from carousel.scheduler.live_snapshot import live_buffer, live_queue_store, live_snapshot
from hsm_adapters.base import HsmAdapter
from hsm_adapters.site import site_adapters
from policies.base import Policy

log = structlog.get_logger(__name__)


def live_projection(
    settings: Settings,
    session_factory: sessionmaker[Session],
    adapter: HsmAdapter,
    clock: Clock,
    policy: Policy,
) -> Projection:
    """The live queue projected under `policy`, now (what the dry run does for the active policy)."""
    store = live_queue_store(settings, session_factory, library=None)  # every library of the site
    buffer = live_buffer(settings, session_factory, site_adapters(adapter))
    snapshot = live_snapshot(store, adapter, clock, buffer=buffer)
    return project(snapshot, policy.plan)


def outlook_now(
    shared: SharedProjection[SiteProjection],
    session_factory: sessionmaker[Session],
    clock: Clock,
    request_id: str,
    created_at: datetime,
    *,
    work: RequestWork | None = None,
) -> RequestOutlook | None:
    """The request's outlook; None when no projection could be made (logged). Opens its own transactions:
    call it with none open (SQLite). `work`: the request's pending work when the caller has read it already
    (in the transaction it read the request in: one transaction a call fewer)."""
    try:
        projection = shared.get(covering=created_at)
    except Exception:
        log.warning("no outlook: the projection failed", request_id=request_id, exc_info=True)
        return None
    if work is None:
        with transaction(session_factory) as session:
            work = request_work(session, request_id, clock.now())
    return site_request_outlook(projection, work, submitted_at=created_at)
