"""What every route needs, held on app.state, and the dependencies that hand it out.

`db_session` is the API's one commit point: the route's work commits when the route returns, before the
response is sent, and rolls back when it raises. `current_caller` is the one place that says who calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.domain.clock import Clock
from carousel.domain.errors import Unauthorized
from carousel.intake.model import ANONYMOUS, Caller
from hsm_adapters.base import HsmAdapter


@dataclass(frozen=True, slots=True)
class AppContext:
    settings: Settings
    adapter: HsmAdapter
    clock: Clock
    session_factory: sessionmaker[Session]


def app_context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


def db_session(request: Request) -> Iterator[Session]:
    with app_context(request).session_factory() as session, session.begin():
        yield session


def current_caller(request: Request) -> Caller:
    """Today every caller is "anonymous" (when the settings allow anonymous calls). Authentication replaces
    this one function; the rest of the service only ever sees the Caller it returns."""
    if app_context(request).settings.anonymous:
        return ANONYMOUS
    raise Unauthorized("anonymous calls are turned off and this service has no authentication configured")


Context = Annotated[AppContext, Depends(app_context)]
DbSession = Annotated[Session, Depends(db_session, scope="function")]
CurrentCaller = Annotated[Caller, Depends(current_caller)]


def public_base_url(request: Request) -> str:
    """The base URL clients should use: public_url when set, else the scheme, host and port they called."""
    configured = app_context(request).settings.public_url
    if configured:
        return configured
    return str(request.base_url).rstrip("/")
