"""The API process's outlook of the queue: one projection shared by every caller (docs/api.md, "Outlook").

A projection is one snapshot of the queue (the scheduler's own read) and the library's health, capacity and
cost figures, projected forward under the active policy (carousel.outlook.projection). It is made at most
every `outlook_refresh_s` seconds, one at a time: a caller that finds it stale while another is making it
gets the one it has; only when there is none yet do callers wait for the first. A request submitted after
the projection's snapshot asks for a new one, made when the current one is at least `MIN_REFRESH_S` old.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import structlog
from fastapi import Request

from carousel.api.context import AppContext, app_context
from carousel.db.engine import transaction
from carousel.db.outlook_queries import request_work
from carousel.domain.clock import Clock
from carousel.outlook.projection import Projection, project
from carousel.outlook.request_outlook import RequestOutlook, request_outlook
from carousel.policy_admin import changes
from carousel.policy_admin.validation import built_policy
from carousel.scheduler.live_snapshot import live_queue_store, live_snapshot

log = structlog.get_logger(__name__)

MIN_REFRESH_S = 1.0


class SharedProjection:
    """The latest projection, made anew by `compute` when older than `refresh_s` on `clock` (thread-safe)."""

    def __init__(
        self,
        compute: Callable[[], Projection],
        *,
        clock: Clock,
        refresh_s: float,
        min_refresh_s: float = MIN_REFRESH_S,
    ) -> None:
        self._compute = compute
        self._clock = clock
        self.refresh = timedelta(seconds=refresh_s)
        self.min_refresh = timedelta(seconds=min(min_refresh_s, refresh_s))
        self._ready = threading.Condition()
        self._current: Projection | None = None
        self._made_at = datetime.min.replace(tzinfo=UTC)
        self._computing = False
        self.computed = 0  # projections made (for tests and logs)

    def get(self, *, covering: datetime | None = None) -> Projection:
        """The shared projection; a fresh one if it is older than refresh_s, or if its snapshot precedes
        `covering` (a request's submission) and it is older than min_refresh_s."""
        with self._ready:
            while True:
                current = self._current
                if current is not None and not self._stale(current, covering):
                    return current
                if not self._computing:
                    self._computing = True
                    break
                if current is not None:  # being made anew by another caller: this one will do
                    return current
                self._ready.wait()
        started = self._clock.now()
        try:
            made = self._compute()
        finally:
            with self._ready:
                self._computing = False
                self._ready.notify_all()
        with self._ready:
            self._current, self._made_at = made, started
            self.computed += 1
        return made

    def _stale(self, current: Projection, covering: datetime | None) -> bool:
        age = self._clock.now() - self._made_at
        if age >= self.refresh:
            return True
        return covering is not None and current.now < covering and age >= self.min_refresh


def live_projection(context: AppContext) -> Projection:
    """The queue projected under the active policy, now (what dry_run does for the active policy)."""
    with transaction(context.session_factory) as session:
        choice = changes.active_settings(session, context.settings).choice
    policy = built_policy(choice)
    store = live_queue_store(context.settings, context.session_factory)
    return project(live_snapshot(store, context.adapter, context.clock), policy.plan)


_MADE = threading.Lock()


def shared_projection(request: Request) -> SharedProjection:
    """The app's shared projection, made on first use."""
    state = request.app.state
    with _MADE:
        shared: SharedProjection | None = getattr(state, "outlook", None)
        if shared is None:
            context = app_context(request)
            shared = state.outlook = SharedProjection(
                lambda: live_projection(context),
                clock=context.clock,
                refresh_s=context.settings.outlook_refresh_s,
            )
    return shared


def outlook_of(request: Request, request_id: str, created_at: datetime) -> RequestOutlook | None:
    """The request's outlook; None when no projection could be made (logged). Opens its own transactions:
    call it with none open (SQLite)."""
    context = app_context(request)
    try:
        projection = shared_projection(request).get(covering=created_at)
    except Exception:
        log.warning("no outlook: the projection failed", request_id=request_id, exc_info=True)
        return None
    with transaction(context.session_factory) as session:
        work = request_work(session, request_id, context.clock.now())
    return request_outlook(projection, work)
