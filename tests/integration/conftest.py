"""Real databases for integration tests: PostgreSQL and SQLite, both migrated by Alembic.

- `session_factory` (parametrised over "postgresql" and "sqlite"): sessions on one connection whose outer
  transaction is rolled back after the test; code under test may commit (its commits release savepoints).
- `fresh_database_url` (same parameters): a new migrated database of its own, for tests that need real
  commits seen by several connections (locks, concurrency). Slower: use it only for that.
- `empty_database_url`: a new database with no tables, for migration tests.

PostgreSQL: one migrated template per xdist worker, copied for each database a test asks for. The admin URL
comes from CAROUSEL_TEST_DATABASE_URL (default postgresql+psycopg://postgres@127.0.0.1:5432/postgres). When
PostgreSQL is unreachable the tests error: they are never skipped.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, create_engine, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.engine import make_engine, upgrade_to_head

ADMIN_URL_ENV = "CAROUSEL_TEST_DATABASE_URL"
DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
EPOCH_FOR_ROWS = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = [pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"]


def _worker(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


class PostgresDatabases:
    """Creates and drops this test process's throwaway databases (names carry worker and pid: several
    test runs may share one server)."""

    def __init__(self, admin_url: URL, prefix: str) -> None:
        self.admin_url = admin_url
        self.prefix = prefix
        self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self._created: list[str] = []
        self._counter = itertools.count()
        try:
            with self._admin.connect() as connection:
                connection.execute(text("SELECT 1"))
        except OperationalError as exc:
            pytest.fail(
                f"PostgreSQL is unreachable at {admin_url.render_as_string(hide_password=True)} "
                f"(set {ADMIN_URL_ENV} or start it): {exc.orig}",
                pytrace=False,
            )

    def create(self, suffix: str | None = None, *, template: str | None = None) -> URL:
        name = f"{self.prefix}_{suffix or next(self._counter)}"
        with self._admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            from_template = f' TEMPLATE "{template}"' if template else ""
            connection.execute(text(f'CREATE DATABASE "{name}"{from_template}'))
        self._created.append(name)
        return self.admin_url.set(database=name)

    def drop(self, url: URL) -> None:
        assert url.database is not None
        with self._admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
        self._created.remove(url.database)

    def drop_all(self) -> None:
        for name in reversed(self._created):
            with self._admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self._created.clear()
        self._admin.dispose()


@pytest.fixture(scope="session")
def postgres_databases(request: pytest.FixtureRequest) -> Iterator[PostgresDatabases]:
    admin_url = make_url(os.environ.get(ADMIN_URL_ENV, DEFAULT_ADMIN_URL))
    databases = PostgresDatabases(admin_url, f"carousel_test_{_worker(request.config)}_{os.getpid()}")
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def postgres_template(postgres_databases: PostgresDatabases) -> str:
    """A migrated database that is only ever copied (CREATE DATABASE ... TEMPLATE), never connected to."""
    url = postgres_databases.create("template")
    upgrade_to_head(url)
    assert url.database is not None
    return url.database


@pytest.fixture(scope="session")
def postgresql_engine(postgres_databases: PostgresDatabases, postgres_template: str) -> Iterator[Engine]:
    """This worker's shared migrated PostgreSQL database; tests use it through rolled-back transactions."""
    engine = make_engine(postgres_databases.create("shared", template=postgres_template))
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "template.sqlite3"
    upgrade_to_head(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def sqlite_engine(sqlite_template: Path) -> Iterator[Engine]:
    shared = sqlite_template.with_name("shared.sqlite3")
    shared.write_bytes(sqlite_template.read_bytes())
    engine = make_engine(f"sqlite:///{shared}")
    yield engine
    engine.dispose()


@pytest.fixture(params=BACKENDS)
def db_engine(request: pytest.FixtureRequest) -> Engine:
    engine: Engine = request.getfixturevalue(f"{request.param}_engine")
    return engine


@pytest.fixture
def db_connection(db_engine: Engine) -> Iterator[Connection]:
    with db_engine.connect() as connection:
        outer = connection.begin()
        try:
            yield connection
        finally:
            if outer.is_active:
                outer.rollback()


@pytest.fixture
def session_factory(db_connection: Connection) -> sessionmaker[Session]:
    """Sessions joined to the test's outer transaction: commits become savepoint releases, and everything
    is rolled back when the test ends."""
    return sessionmaker(
        bind=db_connection,
        join_transaction_mode="create_savepoint",
        expire_on_commit=False,
        autoflush=False,
    )


@pytest.fixture(params=BACKENDS)
def fresh_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[URL]:
    """A migrated database of the test's own, committed to for real."""
    if request.param == "postgresql":
        databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
        template: str = request.getfixturevalue("postgres_template")
        url = databases.create(template=template)
        yield url
        databases.drop(url)
    else:
        template_file: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "fresh.sqlite3"
        path.write_bytes(template_file.read_bytes())
        yield make_url(f"sqlite:///{path}")


@pytest.fixture(params=BACKENDS)
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[URL]:
    """A database with no tables at all."""
    if request.param == "postgresql":
        databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
        url = databases.create()
        yield url
        databases.drop(url)
    else:
        yield make_url(f"sqlite:///{tmp_path / 'empty.sqlite3'}")
