"""Exactly one scheduler leads at a time, and it stays the leader.

PostgreSQL: a session-level advisory lock on a connection of its own (autocommit). It is tried, never waited
for, and once granted it is kept from cycle to cycle until `release()` (or the process ends: its connection
closes and the lock goes with it). Leadership is sticky because the leader's adapter holds the batches it
submitted and their events: a standby that took turns would hand the same files to a library of its own.
A standby tries at each of its cycles, so it takes over within one cycle interval of the leader's end.

Each cycle the leader checks that its lock connection still answers; if not (the database restarted, the
connection broke), the lock is gone with it, and the instance tries to take it again like a standby. Every
grant starts a new *term* (`term` counts them): the cycle then hands what is in flight to its library again
(carousel.scheduler.inflight), since the files may have gone to another instance meanwhile.

SQLite: one process owns the file, so the lock is always granted, in a single term.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

import structlog
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

log = structlog.get_logger(__name__)

# "carousel" in ASCII: one key for every carousel scheduler sharing a database
SCHEDULER_LOCK_KEY = 0x6361726F7573656C


class LeaderLock(Protocol):
    @property
    def term(self) -> int:
        """How many times this instance has become the leader (0: never yet)."""
        ...

    def hold(self) -> AbstractContextManager[bool]:
        """True inside the block when this process is the leader for it."""
        ...

    def release(self) -> None:
        """Stop leading (at shutdown), so that a standby takes over at its next cycle."""
        ...


class SingleProcessLock:
    """SQLite: the one instance is always the leader."""

    term = 1

    @contextmanager
    def hold(self) -> Iterator[bool]:
        yield True

    def release(self) -> None:
        return None


class AdvisoryLock:
    def __init__(self, engine: Engine, key: int = SCHEDULER_LOCK_KEY) -> None:
        self.engine = engine
        self.key = key
        self._term = 0
        self._connection: Connection | None = None

    @property
    def term(self) -> int:
        return self._term

    @property
    def leading(self) -> bool:
        return self._connection is not None

    @contextmanager
    def hold(self) -> Iterator[bool]:
        """Raises SQLAlchemyError when the database cannot be reached (no one can lead then)."""
        yield self._lead()

    def _lead(self) -> bool:
        if self._connection is not None:
            if self._still_held(self._connection):
                return True
            self._forget("the leader lock's connection broke: the lock went with it")
        # autocommit: the lock belongs to the connection, and no transaction stays open beside it
        connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            granted = bool(
                connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key}).scalar()
            )
        except BaseException:
            connection.invalidate()
            connection.close()
            raise
        if not granted:
            connection.close()
            return False
        self._connection = connection
        self._term += 1
        log.info("leader lock taken: this instance leads", term=self._term)
        return True

    @staticmethod
    def _still_held(connection: Connection) -> bool:
        try:
            connection.execute(text("SELECT 1"))
        except SQLAlchemyError:
            return False
        return True

    def _forget(self, why: str) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            log.warning(why)
            try:
                connection.invalidate()
                connection.close()
            except SQLAlchemyError:
                pass

    def release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
            connection.close()
        except SQLAlchemyError:
            connection.invalidate()  # a broken connection holds no lock
        log.info("leader lock released")


def leader_lock_for(session_factory: sessionmaker[Session]) -> LeaderLock:
    """The lock that suits the database the sessions are bound to: the advisory lock for sessions of a
    PostgreSQL engine; none for SQLite, nor for sessions bound to one connection (whoever owns that
    connection is the one instance using it: tests that roll everything back)."""
    bind = session_factory.kw.get("bind")
    if isinstance(bind, Engine) and bind.dialect.name == "postgresql":
        return AdvisoryLock(bind)
    return SingleProcessLock()
