"""Call-rate token buckets in the database: every API process, on every host, takes from the same ones.

A charge is one short transaction of its own: the buckets it needs are made (full) when missing, locked in
key order (two charges wait for each other, never deadlock; SQLite's one writer needs no row lock), read,
and written back. No row stands for a full bucket, so rows idle long enough to have refilled are pruned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from carousel.db.models import RateBucket


@dataclass(frozen=True, slots=True)
class StoredBucket:
    tokens: float
    updated_at: datetime


def locked_buckets(session: Session, full: Mapping[str, float], now: datetime) -> dict[str, StoredBucket]:
    """The buckets of `full`'s keys, locked until the transaction ends; a missing one is made holding its
    `full` tokens as of `now`."""
    keys = sorted(full)
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    rows = [{"key": key, "tokens": full[key], "updated_at": now} for key in keys]
    session.execute(insert(RateBucket).values(rows).on_conflict_do_nothing(index_elements=["key"]))
    found = session.execute(
        select(RateBucket.key, RateBucket.tokens, RateBucket.updated_at)
        .where(RateBucket.key.in_(keys))
        .order_by(RateBucket.key)
        .with_for_update()
    )
    return {row.key: StoredBucket(row.tokens, row.updated_at) for row in found}


def store_buckets(session: Session, buckets: Mapping[str, StoredBucket]) -> None:
    for key in sorted(buckets):
        bucket = buckets[key]
        session.execute(
            update(RateBucket)
            .where(RateBucket.key == key)
            .values(tokens=bucket.tokens, updated_at=bucket.updated_at)
        )


def prune_full_buckets(session: Session, idle_since: datetime) -> int:
    """Forget buckets untouched since `idle_since` (full again by now: no row means a full bucket)."""
    result = session.execute(delete(RateBucket).where(RateBucket.updated_at < idle_since))
    return int(getattr(result, "rowcount", 0) or 0)
