"""Engines, sessions, the one transaction helper, and schema migration (upgrade, currency check).

SQLite is made to behave: foreign keys on, WAL, a busy timeout, and transactions that begin with
BEGIN IMMEDIATE (pysqlite's own transaction handling would break savepoints, and a deferred transaction that
reads and then writes fails at once with "database is locked" when another writer got in between).

Every error about the database as a whole (missing, unreachable, on another schema) names it, its password
hidden: an admin with several databases must know which one is meant.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from carousel.config import Settings
from carousel.db.transient_errors import ATTEMPTS, retrying
from carousel.domain.errors import ConfigError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000

T = TypeVar("T")


def _sqlite_file(url: URL) -> Path | None:
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _make_sqlite_behave(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _url_of(source: Settings | str | URL) -> URL:
    return make_url(source.database_url if isinstance(source, Settings) else source)


def printable_url(url: str | URL) -> str:
    """The database as messages name it: its URL with the password hidden, a SQLite file's path absolute."""
    parsed = make_url(url)
    sqlite_file = _sqlite_file(parsed) if parsed.get_backend_name() == "sqlite" else None
    if sqlite_file is not None and not sqlite_file.is_absolute():
        parsed = parsed.set(database=str(sqlite_file.absolute()))
    return parsed.render_as_string(hide_password=True)


def make_engine(source: Settings | str | URL, **kwargs: Any) -> Engine:
    """An engine for the settings' database (or a URL). Creates the directory of a SQLite file."""
    url = _url_of(source)
    if url.get_backend_name() == "sqlite":
        sqlite_file = _sqlite_file(url)
        if sqlite_file is not None:
            try:
                sqlite_file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise ConfigError(
                    f"database {printable_url(url)}: cannot create {sqlite_file.parent}: {reason}"
                ) from exc
        # One process serves HTTP from a thread pool and runs the scheduler in another thread.
        connect_args = {"check_same_thread": False, **kwargs.pop("connect_args", {})}
        engine = create_engine(url, connect_args=connect_args, **kwargs)
        _make_sqlite_behave(engine)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    # The API's 20 database slots (carousel.api.context) and 10 more for rate charges and renders outside
    # them, all kept once opened: an overflow connection is closed when it comes back, so a loaded API
    # opened a new connection (a PostgreSQL backend started) about ten times a second.
    if "pool_size" not in kwargs:
        kwargs.update(pool_size=30, max_overflow=0)
    return create_engine(url, **kwargs)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


def autocommit_session_factory(session_factory: sessionmaker[Session]) -> sessionmaker[Session] | None:
    """Sessions on the same engine and pool whose statements each commit on their own: no BEGIN and no
    COMMIT, two round trips fewer, for work of one statement or reads (under READ COMMITTED a transaction
    gives a read nothing more). PostgreSQL only (SQLite's one writer is taken by a transaction); None when
    the factory is not bound to an engine."""
    engine = session_factory.kw.get("bind")
    if not isinstance(engine, Engine) or engine.dialect.name != "postgresql":
        return None
    return make_session_factory(engine.execution_options(isolation_level="AUTOCOMMIT"))


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """The one commit point: commits when the block ends normally, rolls back when it raises."""
    with factory() as session, session.begin():
        yield session


def run_transaction(
    factory: sessionmaker[Session],
    work: Callable[[Session], T],
    *,
    attempts: int = ATTEMPTS,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """`work` in one transaction (committed when it returns), run again whole when PostgreSQL rolls it back
    for a deadlock or a serialization failure (carousel.db.transient_errors). `work` must do nothing but
    database work: it may run more than once."""

    def once() -> T:
        with transaction(factory) as session:
            return work(session)

    return retrying(attempts=attempts, sleep=sleep)(once)


# --- migrations -------------------------------------------------------------------------------------------


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic configuration that works from an installed package (no alembic.ini needed)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision this code ships (read once per process: the scripts do not change under it)."""
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise ConfigError(f"the migrations have {len(heads)} heads ({', '.join(heads)}): merge them")
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def schema_problem(connection: Connection) -> str | None:
    """None when the database's schema is the one this code needs, else what is wrong and what to run (not
    naming the database: /readyz tells it to anyone who asks)."""
    current = MigrationContext.configure(connection).get_current_revision()
    head = head_revision()
    if current == head:
        return None
    at = current if current is not None else "empty (no carousel tables)"
    return f"schema is at {at}, this carousel needs {head}: run `carousel db upgrade`"


def _connect(engine: Engine) -> Connection:
    """A connection, or a ConfigError naming the database that cannot be reached and why."""
    try:
        return engine.connect()
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise ConfigError(f"database {printable_url(engine.url)} cannot be reached: {reason}") from exc


def check_schema_current(engine: Engine) -> None:
    """Refuse to run on a schema other than the one this code was written for, naming the database."""
    with _connect(engine) as connection:
        problem = schema_problem(connection)
    if problem is not None:
        raise ConfigError(f"database {printable_url(engine.url)}: {problem}")


def open_database(source: Settings | str | URL, **kwargs: Any) -> Engine:
    """An engine on an existing database whose schema is the one this code needs, else a ConfigError naming
    the database. Creates nothing: a SQLite file that is not there is reported (`carousel db upgrade` makes
    it), never made empty where the service would not look."""
    url = _url_of(source)
    sqlite_file = _sqlite_file(url) if url.get_backend_name() == "sqlite" else None
    if sqlite_file is not None and not sqlite_file.is_file():
        raise ConfigError(
            f"database {printable_url(url)} does not exist: run `carousel db upgrade` to create it, or name "
            "the service's database with CAROUSEL_DATA_DIR or CAROUSEL_DATABASE_URL"
        )
    engine = make_engine(url, **kwargs)
    try:
        check_schema_current(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _migrate(url: str | URL, revision: str, *, up: bool) -> None:
    engine = make_engine(url)
    sqlite = engine.dialect.name == "sqlite"
    try:
        with _connect(engine) as connection:
            if sqlite:
                # Batch mode rebuilds SQLite tables; with foreign keys on, dropping the old copy would
                # cascade into the rows that refer to it. The pragma only works outside a transaction.
                dbapi_connection = connection.connection.dbapi_connection
                assert dbapi_connection is not None
                dbapi_connection.cursor().execute("PRAGMA foreign_keys = OFF")
            with connection.begin():
                migrate = command.upgrade if up else command.downgrade
                migrate(alembic_config(connection), revision)
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                    if broken:
                        raise ConfigError(f"migration to {revision} left dangling references: {broken[:5]}")
    finally:
        engine.dispose()


def upgrade_to_head(url: str | URL) -> str:
    """Migrate the database at url to the newest schema; returns the revision it is now at."""
    _migrate(url, "head", up=True)
    return head_revision()


def downgrade_to(url: str | URL, revision: str) -> None:
    """Migrate down to revision ("base" removes every carousel table)."""
    _migrate(url, revision, up=False)
