"""The API's authentication dependencies: `current_caller` (who calls, charged to the rate limits) and
`require_admin` (the admin role, for admin endpoints). The Authenticator and the RateLimiter are built
once by the app factory and kept on app.state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker
from starlette.datastructures import State

from carousel.api.rate_limit import Rate, RateLimiter
from carousel.auth.authenticator import Authenticator
from carousel.auth.errors import InsufficientScope, MissingCredentials
from carousel.config import Settings
from carousel.db.engine import autocommit_session_factory
from carousel.domain.callers import ANONYMOUS, Caller
from carousel.domain.clock import Clock

# Where the caller identified before the body was read is kept in the request's scope["state"].
CALLER_IN_SCOPE = "carousel.caller"


def install_auth(
    state: State, settings: Settings, clock: Clock, session_factory: sessionmaker[Session]
) -> None:
    """Put the authenticator and the rate limiter (its buckets in the database, shared by every API
    process) on the app's state (a ConfigError for bad settings)."""
    quotas = settings.quotas
    state.authenticator = Authenticator(settings.auth, anonymous=settings.anonymous, clock=clock)
    state.rate_limiter = RateLimiter(
        caller=Rate(quotas.caller_calls_per_s, quotas.caller_burst) if quotas.caller_calls_per_s else None,
        group=Rate(quotas.group_calls_per_s, quotas.group_burst) if quotas.group_calls_per_s else None,
        clock=clock,
        session_factory=session_factory,
        autocommit_factory=autocommit_session_factory(session_factory),
    )


def identify(
    state: State, headers: Mapping[str, str], peer: str | None, *, autocommit: Session | None = None
) -> Caller:
    """Who calls (401 without valid credentials, unless anonymous calls are allowed), after the call was
    counted against the rate limits (429 over them). `autocommit`: a session of statements committed on
    their own that the route reads in next, to charge in (one connection checkout a call, not two)."""
    authenticator: Authenticator = state.authenticator
    caller = authenticator.authenticate(
        authorization=headers.get("authorization"), peer=peer, headers=headers
    )
    limiter: RateLimiter = state.rate_limiter
    limiter.charge(caller, autocommit=autocommit)
    return caller


def current_caller(request: Request) -> Caller:
    """The caller of this request: the one identified before its body was read (AuthenticateFirst), else
    identified now. (Usable as a dependency: its one parameter is the request.)"""
    return caller_charged_in(request, None)


def _identified_first(request: Request) -> Caller | None:
    """The caller AuthenticateFirst identified before the body was read, if it did."""
    known: Caller | None = request.scope.get("state", {}).get(CALLER_IN_SCOPE)
    return known


def caller_charged_in(request: Request, autocommit: Session | None) -> Caller:
    """current_caller, a caller identified now being charged in `autocommit` (see identify)."""
    known = _identified_first(request)
    if known is not None:
        return known
    peer = request.client.host if request.client else None
    return identify(request.app.state, request.headers, peer, autocommit=autocommit)


async def calling(request: Request) -> Caller:
    """current_caller as a dependency: in the event loop when AuthenticateFirst has identified the caller
    (FastAPI runs a plain `def` dependency in a worker thread, a hand-over each way per call), else in a
    worker thread (identifying may read the database)."""
    known = _identified_first(request)
    if known is not None:
        return known
    return await anyio.to_thread.run_sync(current_caller, request)


def require_admin(caller: Annotated[Caller, Depends(calling)]) -> Caller:
    """For admin endpoints: 401 to the anonymous caller (credentials would help), 403 to the others."""
    if caller.grants.admin:
        return caller
    if caller.name == ANONYMOUS.name:
        raise MissingCredentials("this endpoint needs the admin role: send a bearer token that grants it")
    raise InsufficientScope(f"{caller.name} does not have the admin role")


AdminCaller = Annotated[Caller, Depends(require_admin)]
