"""Many rows sent to the database as one set, for statements of the form `UPDATE t ... FROM <rows> AS u`.

PostgreSQL: the rows go as one array per column and `unnest` turns them back into rows, so a statement
changes any number of rows in one execution (a statement-level trigger fires once, the planner sees one
join). SQLite: the same statement runs once per row (executemany) over a one-row `SELECT`; it has only
row-level triggers and one writer at a time, so a set gains nothing there, and the results are the same.

Callers write the statement once with the `{rows}` placeholder and name the columns with their types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Boolean, Integer, String, Text, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from carousel.db.models import UtcDateTime

# the SQL type PostgreSQL casts each column's array to, by SQLAlchemy type
_PG_ARRAY = {
    BigInteger: "bigint[]",
    Integer: "integer[]",
    String: "text[]",
    Text: "text[]",
    Boolean: "boolean[]",
    UtcDateTime: "timestamptz[]",
}


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type_: type[TypeEngine[Any]]


def postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def execute_over_rows(
    session: Session,
    statement: str,
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Any]],
    params: Sequence[tuple[Column, Any]] = (),
) -> None:
    """Run `statement` (with `{rows}` where the rows go, as `u`) over `rows` (dicts keyed by column name);
    `params` (a column and its one value) are the same for every row. Nothing happens for no rows."""
    if not rows:
        return
    extra = {c.name: value for c, value in params}
    extra_binds = [bindparam(c.name, type_=c.type_()) for c, _ in params]
    if postgresql(session):
        arrays = ", ".join(f"CAST(:{c.name} AS {_PG_ARRAY[c.type_]})" for c in columns)
        names = ", ".join(c.name for c in columns)
        source = f"unnest({arrays}) AS u({names})"
        binds = [bindparam(c.name, type_=ARRAY(c.type_())) for c in columns]
        values = {c.name: [row[c.name] for row in rows] for c in columns}
        session.execute(
            text(statement.format(rows=source)).bindparams(*binds, *extra_binds), {**values, **extra}
        )
        return
    source = "(SELECT " + ", ".join(f":{c.name} AS {c.name}" for c in columns) + ") AS u"
    binds = [bindparam(c.name, type_=c.type_()) for c in columns]
    session.execute(
        text(statement.format(rows=source)).bindparams(*binds, *extra_binds),
        [{**{c.name: row[c.name] for c in columns}, **extra} for row in rows],
    )
