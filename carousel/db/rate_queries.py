"""Call-rate token buckets in the database: every API process, on every host, takes from the same ones.

A charge is one statement per bucket, in one short transaction: an upsert that makes a missing bucket full,
refills a present one to `now` and takes a token, but changes nothing when the refilled bucket holds less
than one (PostgreSQL locks the row for the transaction; SQLite has one writer). Buckets are taken in key
order, so two charges wait for each other and never deadlock. No row stands for a full bucket, so rows idle
long enough to have refilled are pruned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import ColumnElement, Float, delete, extract, func, literal, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from carousel.db.models import RateBucket, UtcDateTime

B = RateBucket
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
        return cast(ColumnElement[float], extract("epoch", now - B.updated_at))
    # SQLite keeps UTC text, and its date functions count milliseconds; julianday's days, a double near 2.5
    # million, carry that to about 10 microseconds: rounded back to the millisecond
    return func.round((func.julianday(now) - func.julianday(B.updated_at)) * 86_400.0, 3)


def without_waiting_for_disk(session: Session) -> None:
    """The charge's commit need not wait for its WAL to reach the disk (PostgreSQL): every call is charged,
    and a flush per call cost more than the rest of a status call. A crash may lose the last moment's
    charges, which hands those callers back a few tokens; nothing else is written in these transactions."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SET LOCAL synchronous_commit TO OFF"))


def take_token(session: Session, charge: BucketCharge, now: datetime) -> bool:
    """One token from the bucket (made full when missing, refilled to `now`); False, and nothing changed,
    when it holds less than one."""
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    least, greatest = (func.least, func.greatest) if dialect == "postgresql" else (func.min, func.max)
    at = literal(now, UtcDateTime())
    elapsed = greatest(literal(0.0, Float()), _seconds_since(dialect, at))
    refilled = least(literal(charge.capacity, Float()), B.tokens + elapsed * charge.per_s)
    statement = (
        insert(B)
        .values(key=charge.key, tokens=charge.capacity - 1, updated_at=now)
        .on_conflict_do_update(
            index_elements=[B.key],
            set_={"tokens": refilled - 1, "updated_at": greatest(at, B.updated_at)},
            where=refilled >= 1 - ROUNDING,
        )
        .returning(B.key)
    )
    return session.execute(statement).first() is not None


def buckets(session: Session, keys: Sequence[str]) -> dict[str, StoredBucket]:
    found = session.execute(select(B.key, B.tokens, B.updated_at).where(B.key.in_(keys)))
    return {row.key: StoredBucket(row.tokens, row.updated_at) for row in found}


def prune_full_buckets(session: Session, idle_since: datetime) -> int:
    """Forget buckets untouched since `idle_since` (full again by now: no row means a full bucket)."""
    result = session.execute(delete(B).where(B.updated_at < idle_since))
    return int(getattr(result, "rowcount", 0) or 0)
