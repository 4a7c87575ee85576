"""Call-rate token buckets in the database: every API process, on every host, takes from the same ones.

A charge is one statement per bucket (two buckets: in one short transaction): an upsert that makes a missing
bucket full, refills a present one to `now` and takes a token, but changes nothing when the refilled bucket
holds less than one (PostgreSQL locks the row for the transaction; SQLite has one writer). Buckets are taken
in key order, so two charges wait for each other and never deadlock. No row stands for a full bucket, so rows
idle long enough to have refilled are pruned.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import ColumnElement, Float, Table, bindparam, delete, extract, func, literal, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningInsert

from carousel.db.models import RateBucket, UtcDateTime

B = RateBucket
T = cast(Table, RateBucket.__table__)  # Core, not ORM: no ORM bulk-insert machinery on every call
# A token counts when the bucket holds this much short of one: floating-point rounding of tokens + seconds
# x rate must not refuse a call whose token is due to the microsecond.
ROUNDING = 1e-6


@dataclass(frozen=True, slots=True)
class BucketCharge:
    key: str
    per_s: float
    capacity: float


@dataclass(frozen=True, slots=True)
class StoredBucket:
    tokens: float
    updated_at: datetime


def _seconds_since(dialect: str, now: ColumnElement[datetime]) -> ColumnElement[float]:
    if dialect == "postgresql":
        return cast(ColumnElement[float], extract("epoch", now - T.c.updated_at))
    # SQLite keeps UTC text, and its date functions count milliseconds; julianday's days, a double near 2.5
    # million, carry that to about 10 microseconds: rounded back to the millisecond
    return func.round((func.julianday(now) - func.julianday(T.c.updated_at)) * 86_400.0, 3)


@functools.cache
def _take_statement(dialect: str) -> ReturningInsert[tuple[str]]:
    """The upsert of take_token, built once per dialect (a charge is on every call)."""
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    least, greatest = (func.least, func.greatest) if dialect == "postgresql" else (func.min, func.max)
    at = bindparam("now", type_=UtcDateTime())
    capacity = bindparam("capacity", type_=Float())
    elapsed = greatest(literal(0.0, Float()), _seconds_since(dialect, at))
    refilled = least(capacity, T.c.tokens + elapsed * bindparam("per_s", type_=Float()))
    return (
        insert(T)
        .values(key=bindparam("key"), tokens=capacity - 1, updated_at=at)
        .on_conflict_do_update(
            index_elements=[T.c.key],
            set_={"tokens": refilled - 1, "updated_at": greatest(at, T.c.updated_at)},
            where=refilled >= 1 - ROUNDING,
        )
        .returning(T.c.key)
    )


def take_token(session: Session, charge: BucketCharge, now: datetime) -> bool:
    """One token from the bucket (made full when missing, refilled to `now`); False, and nothing changed,
    when it holds less than one. One statement, so on its own it is a whole charge (PostgreSQL: in a session
    of autocommit; the table is unlogged, so no commit of a charge waits for the disk, migration 0015)."""
    statement = _take_statement(session.get_bind().dialect.name)
    params = {"key": charge.key, "capacity": charge.capacity, "per_s": charge.per_s, "now": now}
    return session.execute(statement, params).first() is not None


def buckets(session: Session, keys: Sequence[str]) -> dict[str, StoredBucket]:
    found = session.execute(select(B.key, B.tokens, B.updated_at).where(B.key.in_(keys)))
    return {row.key: StoredBucket(row.tokens, row.updated_at) for row in found}


def prune_full_buckets(session: Session, idle_since: datetime) -> int:
    """Forget buckets untouched since `idle_since` (full again by now: no row means a full bucket)."""
    result = session.execute(delete(B).where(B.updated_at < idle_since))
    return int(getattr(result, "rowcount", 0) or 0)
