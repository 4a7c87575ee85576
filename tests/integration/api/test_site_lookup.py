"""Staging on a site of two libraries through the Tape REST API, on PostgreSQL and SQLite: each file's row
records the library holding the copy chosen (a path with copies in both: the one served soonest), the
same tape ID in both libraries stays two tapes, and a path in neither fails as not on tape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import QueuedFileRow
from carousel.domain.clock import ManualClock
from hsm_adapters.simulated.adapter import build_simulated_adapter
from hsm_adapters.site import Site
from tests.integration.api.conftest import SyncApi

GB = 10**9


@pytest.fixture
def library(clock: ManualClock, tmp_path: Path) -> Iterator[Site]:
    """The site the API asks (the conftest's `library`, overridden): LTO-9 × 8 and LTO-7 × 4, both with a
    tape T1; /both/x on each, mid-tape (LTO-9 serves it sooner)."""
    rows = {
        "new": [f"/new/a,{GB},T1,0", f"/both/x,{GB},T1,{GB}"],
        "old": [f"/old/b,{GB},T1,0", f"/both/x,{GB},T1,{GB}"],
    }
    adapters = {}
    for name, profile, drives in (("new", "lto9", 8), ("old", "lto7", 4)):
        catalogue = tmp_path / f"{name}.csv"
        catalogue.write_text("path,size_bytes,tape,position_bytes\n" + "".join(f"{r}\n" for r in rows[name]))
        options = {"profile": profile, "drives": drives, "catalogue": str(catalogue)}
        adapters[name] = build_simulated_adapter(options, clock)
    site = Site(adapters)
    yield site
    site.close()


def test_each_file_records_the_library_of_the_copy_chosen(
    api: SyncApi, session_factory: sessionmaker[Session]
) -> None:
    paths = ["/new/a", "/old/b", "/both/x", "/nowhere"]
    response = api.post("/api/v1/stage", json={"files": [{"path": p} for p in paths]})
    assert response.status_code == 201, response.text
    with session_factory() as session:
        rows = session.execute(
            select(QueuedFileRow.path, QueuedFileRow.state, QueuedFileRow.library, QueuedFileRow.tape)
        )
        found = {path: (state, library, tape) for path, state, library, tape in rows}
    assert found["/new/a"] == ("QUEUED", "new", "T1")
    assert found["/old/b"] == ("QUEUED", "old", "T1")
    assert found["/both/x"] == ("QUEUED", "new", "T1")
    assert found["/nowhere"][0] == "FAILED"
