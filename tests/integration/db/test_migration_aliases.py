"""Migration 0007 (aliases per caller) on both databases: aliases made before it get their request's owner,
two callers may then share an alias, and it goes down again while no alias is shared."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import String, column, insert, select, table
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError

from carousel.db.engine import current_revision, downgrade_to, head_revision, make_engine, upgrade_to_head
from carousel.db.models import RequestAlias, StageRequest

AT = datetime(2026, 1, 1, tzinfo=UTC)
OLD_ALIASES = table("request_aliases", column("alias", String), column("request_id", String))


def _request(request_id: str, owner: str) -> dict[str, object]:
    return {
        "id": request_id,
        "owner": owner,
        "api": "xrootd",
        "state": "ACTIVE",
        "files_total": 0,
        "created_at": AT,
    }


def test_0008_gives_old_aliases_their_owner_and_lets_callers_share_one(empty_database_url: URL) -> None:
    upgrade_to_head(empty_database_url)
    downgrade_to(empty_database_url, "0007")
    engine = make_engine(empty_database_url)
    try:
        with engine.begin() as connection:
            connection.execute(insert(StageRequest), [_request("r1", "alice"), _request("r2", "bob")])
            connection.execute(insert(OLD_ALIASES).values(alias="x:1", request_id="r1"))
        upgrade_to_head(empty_database_url)
        assert current_revision(engine) == head_revision()
        with engine.begin() as connection:
            rows = connection.execute(select(RequestAlias.owner, RequestAlias.alias, RequestAlias.request_id))
            assert rows.all() == [("alice", "x:1", "r1")]
            connection.execute(insert(RequestAlias).values(owner="bob", alias="x:1", request_id="r2"))
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(insert(RequestAlias).values(owner="alice", alias="x:1", request_id="r2"))
        with engine.begin() as connection:
            connection.execute(RequestAlias.__table__.delete().where(RequestAlias.owner == "bob"))
        downgrade_to(empty_database_url, "0007")
        with engine.connect() as connection:
            assert connection.execute(select(OLD_ALIASES)).all() == [("x:1", "r1")]
    finally:
        engine.dispose()
