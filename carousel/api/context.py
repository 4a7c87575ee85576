"""What every route needs, held on app.state, and the dependencies that hand it out.

`db_session` is the API's one commit point: the route's work commits when the route returns, before the
response is sent, and rolls back when it raises. `current_caller` (from carousel.api.auth) is the one place
that says who calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from carousel.api.auth import calling as calling  # noqa: PLC0414 (re-exported for the routes)
from carousel.api.auth import current_caller as current_caller  # noqa: PLC0414 (re-exported for the routes)
from carousel.api.status_cache import StatusCache
from carousel.config import Settings
from carousel.domain.callers import Caller
from carousel.domain.clock import Clock
from hsm_adapters.base import HsmAdapter

_AFTER_COMMIT = "carousel.after_commit"


@dataclass(frozen=True, slots=True)
class AppContext:
    settings: Settings
    adapter: HsmAdapter
    clock: Clock
    session_factory: sessionmaker[Session]
    status_cache: StatusCache
    # for routes that only read (PostgreSQL: statements committed on their own); None: session_factory's
    read_session_factory: sessionmaker[Session] | None = None


def app_context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


# Requests holding a database session at once. Below the connection pool's 30 (carousel.db.engine),
# leaving room for rate charges, the scheduler and background renders. Without it, a crowd of
# requests fills the 40 worker threads with checkouts waiting for a connection, while the requests holding
# the connections wait for a thread to commit in: every request hangs until the pool times out. 10 slots
# left a loaded process half idle, each slot's holder mostly waiting on its round trips (bench/load_test.py:
# 92 calls/s at 10, 120-137 at 20 to 40, the process then at a full core).
DB_SLOTS = 20


async def db_slot(request: Request) -> AsyncIterator[None]:
    """Waits (in the event loop, holding no worker thread) for one of DB_SLOTS."""
    state = request.app.state
    slots: anyio.Semaphore | None = getattr(state, "db_slots", None)
    if slots is None:  # made in the event loop, on first use
        slots = state.db_slots = anyio.Semaphore(DB_SLOTS)
    async with slots:
        yield


def db_session(
    request: Request, _slot: Annotated[None, Depends(db_slot, scope="function")]
) -> Iterator[Session]:
    with app_context(request).session_factory() as session:
        with session.begin():
            yield session
        for callback in session.info.pop(_AFTER_COMMIT, ()):
            callback()


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run callback once the route's transaction has committed (not at all if it rolls back)."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


async def _context(request: Request) -> AppContext:
    """app_context as a dependency, in the event loop (a plain `def` would be run in a worker thread)."""
    return app_context(request)


Context = Annotated[AppContext, Depends(_context)]
DbSession = Annotated[Session, Depends(db_session, scope="function")]
# For routes that open their own short transactions (SQLite allows one writer: a route session held open
# beside them would lock them out).
DbSlot = Annotated[None, Depends(db_slot, scope="function")]
CurrentCaller = Annotated[Caller, Depends(calling)]


def public_base_url(request: Request) -> str:
    """The base URL clients should use: public_url when set, else the scheme, host and port they called."""
    configured = app_context(request).settings.public_url
    if configured:
        return configured
    return str(request.base_url).rstrip("/")
