"""A submit holds the quota locks of the quotas that apply to it, and only those (PostgreSQL's advisory locks,
seen in pg_locks from the submitting transaction): a lock with no limit behind it would make every submit of
a group (often the whole site) wait for the one before it to commit."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from carousel.db.quota_queries import CALLER_QUOTA_LOCK, GROUP_QUOTA_LOCK
from carousel.domain.callers import Caller
from carousel.intake.quota import QueueQuota, hold_quotas

IN_GROUP = Caller("alice", groups=("atlas",))
WITHOUT_GROUP = Caller("bob")


def held_spaces(session: Session) -> set[int]:
    """The first keys of the two-key advisory locks this transaction holds."""
    rows = session.execute(
        text(
            "SELECT classid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
            "AND pid = pg_backend_pid() AND granted"
        )
    )
    return {int(row[0]) for row in rows}


@pytest.mark.parametrize(
    ("caller", "group", "per_caller", "per_group", "expected"),
    [
        (IN_GROUP, "atlas", 50, 50, {CALLER_QUOTA_LOCK, GROUP_QUOTA_LOCK}),
        (IN_GROUP, "atlas", 50, None, {CALLER_QUOTA_LOCK}),
        (IN_GROUP, "atlas", None, 50, {GROUP_QUOTA_LOCK}),
        (IN_GROUP, "atlas", None, None, set()),
        # `default` of a caller without groups is not a group of theirs: no group quota, no group lock
        (WITHOUT_GROUP, "default", 50, 50, {CALLER_QUOTA_LOCK}),
        (WITHOUT_GROUP, "cms", None, 50, {GROUP_QUOTA_LOCK}),
    ],
)
def test_only_the_quotas_that_apply_are_locked(
    postgresql_engine: Engine,
    caller: Caller,
    group: str,
    per_caller: int | None,
    per_group: int | None,
    expected: set[int],
) -> None:
    quota = QueueQuota(per_caller=per_caller, per_group=per_group, retry_after_s=5)
    with Session(postgresql_engine) as session, session.begin():
        hold_quotas(session, caller, group, quota)
        assert held_spaces(session) == expected
        session.rollback()
    with Session(postgresql_engine) as session:  # released with the transaction
        assert held_spaces(session) == set()
