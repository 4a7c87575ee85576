"""How many files callers and groups have queued: what the queue quotas count.

A queued file is a link still PENDING (not ended for its requester) in an ACTIVE request: a file shared
by two requesters counts for each, since each asked for it.

A count is a promise only while nobody else can add to it: `hold_quotas` makes a submit's count and its
insert one step for its caller and its group (PostgreSQL: transaction-level advisory locks, released at
commit or rollback; SQLite: every write transaction begins with BEGIN IMMEDIATE, so writers are serialised
already and the count is taken holding the one write lock)."""

from __future__ import annotations

import hashlib
from typing import cast

from sqlalchemy import Select, Table, bindparam, func, select, text
from sqlalchemy.orm import Session

from carousel.db.models import RequestFile, StageRequest
from carousel.domain.states import LinkState, RequestState

LINKS = cast(Table, RequestFile.__table__)
REQUESTS = cast(Table, StageRequest.__table__)

# The first key of the two-key advisory locks (a key space apart from the leader lock's one-key lock): "qc"
# and "qg" in ASCII. The second key is the name's hash: two names with one hash only wait for each other.
CALLER_QUOTA_LOCK = 0x7163
GROUP_QUOTA_LOCK = 0x7167
_HOLD = text("SELECT pg_advisory_xact_lock(:space, :key)")


def hold_quotas(session: Session, owner: str | None, group: str | None) -> None:
    """Until the transaction ends, no other submit of this caller (unless None) or of this group (unless None)
    counts or queues files.

    Always the caller's lock before the group's, and each submit takes at most one of each: two submits never
    hold one another's next lock, so they cannot deadlock. Taken before any row lock (db/lock_order.py)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for space, name in ((CALLER_QUOTA_LOCK, owner), (GROUP_QUOTA_LOCK, group)):
        if name is not None:
            session.execute(_HOLD, {"space": space, "key": _key_of(name)})


def _key_of(name: str) -> int:
    """A name as a signed 32-bit key, the same in every process (Python's own hash() is salted)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


def _queued_files_where(column: str) -> Select[int]:
    """The count of a submit's quota check, built once (a submit counts twice) in Core (the ORM's execution
    layer cost more than the count): the name is bound."""
    return (
        select(func.count())
        .select_from(LINKS)
        .join(REQUESTS, REQUESTS.c.id == LINKS.c.request_id)
        .where(
            REQUESTS.c[column] == bindparam("name"),
            REQUESTS.c.state == RequestState.ACTIVE.value,
            LINKS.c.state == LinkState.PENDING.value,
        )
    )


_QUEUED_OF_OWNER = _queued_files_where("owner")
_QUEUED_OF_GROUP = _queued_files_where("grp")


def queued_files_of_owner(session: Session, owner: str) -> int:
    return int(session.scalar(_QUEUED_OF_OWNER, {"name": owner}) or 0)


def queued_files_of_group(session: Session, group: str) -> int:
    return int(session.scalar(_QUEUED_OF_GROUP, {"name": group}) or 0)
