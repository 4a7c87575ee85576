"""What a database error means for the caller: run the transaction again, or the database is away.

- A deadlock or a serialization failure (PostgreSQL rolled the transaction back to let another one through):
  the whole transaction is run again, a few times, after a short random pause, so two transactions that
  collided do not collide again in step. The pause is drawn at random, never read from the clock.
- A database that does not answer (refused or broken connections, a server shutting down, an exhausted pool):
  the API answers 503 with Retry-After, the scheduler skips its cycle; both carry on when it is back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg.errors
import structlog
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

ATTEMPTS = 5  # the first run and four more
FIRST_PAUSE_S = 0.02  # pauses drawn from [0, 0.02 * 2^n], at most MAX_PAUSE_S
MAX_PAUSE_S = 1.0
RETRY_AFTER_S = 5  # what a client is told to wait when the database is away

_LOST_TO_ANOTHER = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)


def lost_to_another_transaction(exc: BaseException) -> bool:
    """PostgreSQL rolled the transaction back because of another one: running it again is the remedy."""
    return isinstance(exc, DBAPIError) and isinstance(exc.orig, _LOST_TO_ANOTHER)


def database_unavailable(exc: BaseException) -> bool:
    """The database cannot serve now (no connection, a broken one, a busy pool): try again later."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, (OperationalError, InterfaceError, PoolTimeout))


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.info(
        "transaction lost to another one, running it again", attempt=state.attempt_number, error=str(error)
    )


def retrying(*, attempts: int = ATTEMPTS, sleep: Callable[[float], None] = time.sleep) -> Retrying:
    """Runs a callable again when it fails with a deadlock or serialization failure; anything else, or the
    last failure, is raised as it is."""
    return Retrying(
        retry=retry_if_exception(lost_to_another_transaction),
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=FIRST_PAUSE_S, max=MAX_PAUSE_S),
        sleep=sleep,
        before_sleep=_log_retry,
        reraise=True,
    )


def async_retrying(
    *,
    attempts: int = ATTEMPTS,
    also_if: Callable[[], bool] = lambda: True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> AsyncRetrying:
    """`retrying` for coroutines (API requests); `also_if` can veto a retry (a response already sent)."""
    return AsyncRetrying(
        retry=retry_if_exception(lambda exc: lost_to_another_transaction(exc) and also_if()),
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=FIRST_PAUSE_S, max=MAX_PAUSE_S),
        sleep=sleep,
        before_sleep=_log_retry,
        reraise=True,
    )
