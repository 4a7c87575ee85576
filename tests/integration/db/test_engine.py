"""The engine helpers: SQLite made to behave, and the one transaction helper."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, func, select, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.models import StageRequest
from tests.integration.conftest import EPOCH_FOR_ROWS


def _request(request_id: str) -> StageRequest:
    return StageRequest(id=request_id, owner="alice", api="native", files_total=0, created_at=EPOCH_FOR_ROWS)


def test_sqlite_pragmas(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}/x/pragmas.sqlite3")
    try:
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA foreign_keys")).scalar_one() == 1
            assert connection.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
            assert connection.execute(text("PRAGMA busy_timeout")).scalar_one() > 0
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "fresh_database_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
def test_postgresql_keeps_every_connection_it_opened(fresh_database_url: URL) -> None:
    """A burst of 25 checkouts leaves 25 connections in the pool: none is closed on its return (a closed one
    would start a new PostgreSQL backend for the next burst)."""
    engine = make_engine(fresh_database_url)
    try:
        backends = _backends_of_a_burst(engine, 25)
        assert len(backends) == 25
        assert _backends_of_a_burst(engine, 25) == backends
    finally:
        engine.dispose()


def _backends_of_a_burst(engine: Engine, checkouts: int) -> set[int]:
    """The PostgreSQL backends of `checkouts` connections held at once, then all returned."""
    with ExitStack() as stack:
        return {
            stack.enter_context(engine.connect()).execute(text("SELECT pg_backend_pid()")).scalar_one()
            for _ in range(checkouts)
        }


def test_transaction_commits_or_rolls_back(fresh_database_url: URL) -> None:
    engine = make_engine(fresh_database_url)
    factory = make_session_factory(engine)
    try:
        with transaction(factory) as session:
            session.add(_request("kept"))
        with pytest.raises(RuntimeError), transaction(factory) as session:
            session.add(_request("dropped"))
            session.flush()
            raise RuntimeError("boom")
        with factory() as session:
            ids = session.scalars(select(StageRequest.id)).all()
            assert ids == ["kept"]
            assert session.scalar(select(func.count()).select_from(StageRequest)) == 1
    finally:
        engine.dispose()


def test_fixture_sessions_commit_into_savepoints(
    session_factory: sessionmaker[Session], db_connection: Connection
) -> None:
    """Code under test commits through transaction(); the test's outer transaction still holds it all."""
    factory = session_factory
    with transaction(factory) as session:
        session.add(_request("committed"))
    with pytest.raises(RuntimeError), transaction(factory) as session:
        session.add(_request("rolled-back"))
        session.flush()
        raise RuntimeError("boom")
    with factory() as session:
        assert session.scalars(select(StageRequest.id)).all() == ["committed"]
    assert db_connection.in_transaction()
