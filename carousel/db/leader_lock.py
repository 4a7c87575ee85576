"""Exactly one scheduler plans at a time.

PostgreSQL: a session-level advisory lock, tried (never waited for) on a connection of its own and held for
the whole cycle; if the process dies its connection closes and the lock goes with it. SQLite: one process owns
the file, so the lock is always granted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from sqlalchemy import Connection, Engine, text
from sqlalchemy.orm import Session, sessionmaker

# "carousel" in ASCII: one key for every carousel scheduler sharing a database
SCHEDULER_LOCK_KEY = 0x6361726F7573656C


class LeaderLock(Protocol):
    def hold(self) -> AbstractContextManager[bool]:
        """True inside the block when this process is the leader for it."""
        ...


class SingleProcessLock:
    """SQLite: the one instance is always the leader."""

    @contextmanager
    def hold(self) -> Iterator[bool]:
        yield True


class AdvisoryLock:
    def __init__(self, engine: Engine, key: int = SCHEDULER_LOCK_KEY) -> None:
        self.engine = engine
        self.key = key

    @contextmanager
    def hold(self) -> Iterator[bool]:
        # autocommit: the lock belongs to the connection, and no transaction stays open beside it
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            granted = bool(
                connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key}).scalar()
            )
            try:
                yield granted
            finally:
                if granted:
                    connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})


def leader_lock_for(session_factory: sessionmaker[Session]) -> LeaderLock:
    """The lock that suits the database the sessions are bound to."""
    bind = session_factory.kw.get("bind")
    engine = bind.engine if isinstance(bind, Connection) else bind
    if isinstance(engine, Engine) and engine.dialect.name == "postgresql":
        return AdvisoryLock(engine)
    return SingleProcessLock()
