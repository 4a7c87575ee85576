"""Alembic environment. Runs on the connection carousel hands over (carousel db upgrade, tests), or, from the
`alembic` command line, on the database named by `-x url=...` or else by the carousel settings.
"""

from __future__ import annotations

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection

from carousel.db.models import Base, UtcDateTime


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> str | Literal[False]:
    """Write carousel's own column types as plain SQLAlchemy types, so migrations never import models."""
    if type_ == "type" and isinstance(obj, UtcDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        render_item=render_item,
        compare_type=True,
        compare_server_default=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_from_command_line() -> None:
    from carousel.config import load_settings  # noqa: PLC0415 (only the command line needs settings)
    from carousel.db.engine import make_engine  # noqa: PLC0415

    url = context.get_x_argument(as_dictionary=True).get("url") or load_settings().database_url
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            configure_and_run(connection)
    finally:
        engine.dispose()


def run() -> None:
    given = context.config.attributes.get("connection")
    if given is not None:
        configure_and_run(given)
    else:
        run_from_command_line()


run()
