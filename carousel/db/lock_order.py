"""One order for the row locks of every transaction that changes several rows, so that two of them wait for
each other instead of deadlocking: request links by (request, ordinal), then files by path, then requests.

A submit with queue quotas on takes its quota locks (advisory, caller then group: db/quota_queries.py)
before any of these. Intake follows the order by construction (its upsert of a request's files runs in path
order; a cancel updates one request's links, then locks their files in path order). The scheduler's
multi-row updates do not touch rows in that order on their own: completion follows the library's event
order, a hand-over its batch order. So they take the locks first, in the order, with one statement each
(PostgreSQL; SQLite has one writer at a time and cannot deadlock). `FOR NO KEY UPDATE` is the lock an
UPDATE of non-key columns takes anyway, and it lets intake's inserts of links to these files (which
share-lock their keys) through.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import BigInteger, any_, bindparam, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from carousel.db.models import QueuedFileRow, RequestFile
from carousel.domain.states import LinkState

F = QueuedFileRow
L = RequestFile


def _postgresql(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def _ids(file_ids: Collection[int]) -> object:
    # one array parameter, however many files: an IN list would bind one parameter per id
    return any_(bindparam("file_ids", sorted(set(file_ids)), type_=ARRAY(BigInteger)))


def lock_files(session: Session, file_ids: Collection[int]) -> None:
    """Lock these files, in path order."""
    if not file_ids or not _postgresql(session):
        return
    session.execute(
        select(F.id).where(F.id == _ids(file_ids)).order_by(F.path).with_for_update(key_share=True)
    )


def lock_links_and_files(session: Session, file_ids: Collection[int]) -> None:
    """Lock the pending links of these files (by request and ordinal), then the files (by path): what a
    transaction needs before it ends recalls, which updates both."""
    if not file_ids or not _postgresql(session):
        return
    session.execute(
        select(L.request_id)
        .where(L.file_id == _ids(file_ids), L.state == LinkState.PENDING.value)
        .order_by(L.request_id, L.ordinal)
        .with_for_update(key_share=True)
    )
    lock_files(session, file_ids)
