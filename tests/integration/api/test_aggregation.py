"""One recall per file however many requests name it, each requester with its own view, driven through the
HTTP API and the real scheduler cycle on the simulated library in virtual time."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.models import QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.api.conftest import RowCounts, SyncApi, stage
from tests.integration.scheduler.support import make_cycle, run_until


def _states(api: SyncApi, request_id: str) -> dict[str, str]:
    return {f["path"]: f["state"] for f in api.get(f"/api/v1/stage/{request_id}").json()["files"]}


def test_fifty_overlapping_requests_share_one_row_and_recall_per_file(
    api: SyncApi,
    library: SimulatedAdapter,
    library_paths: list[str],
    clock: ManualClock,
    session_factory: sessionmaker[Session],
    row_counts: Callable[[], RowCounts],
) -> None:
    pool = library_paths[:30]
    rng = random.Random(50)
    wanted = [rng.sample(pool, rng.randint(1, 12)) for _ in range(50)]
    requests = [stage(api, paths) for paths in wanted]

    distinct = {path for paths in wanted for path in paths}
    assert row_counts() == RowCounts(requests=50, files=len(distinct), links=sum(map(len, wanted)))
    for request_id, paths in zip(requests, wanted, strict=True):
        assert _states(api, request_id) == dict.fromkeys(paths, "SUBMITTED")

    def everything_answered() -> bool:
        with session_factory() as session:
            active = select(func.count()).select_from(StageRequest).where(StageRequest.state == "ACTIVE")
            return session.scalar(active) == 0

    run_until(make_cycle(session_factory, library, clock), clock, everything_answered)
    for request_id, paths in zip(requests, wanted, strict=True):
        assert _states(api, request_id) == dict.fromkeys(paths, "COMPLETED")
        assert "completedAt" in api.get(f"/api/v1/stage/{request_id}").json()
    document = api.get(f"/api/v1/stage/{requests[0]}").json()
    for entry in document["files"]:
        assert document["createdAt"] <= entry["startedAt"] <= entry["finishedAt"] <= document["completedAt"]
    with session_factory() as session:
        recalls = Counter(session.scalars(select(Recall.file_id)))
        assert len(recalls) == len(distinct)
        assert set(recalls.values()) == {1}


def test_one_requesters_cancel_leaves_the_others_claim(
    api: SyncApi, library_paths: list[str], session_factory: sessionmaker[Session]
) -> None:
    shared, own = library_paths[0], library_paths[1]
    mine = stage(api, [shared, own])
    theirs = stage(api, [shared])
    assert api.post(f"/api/v1/stage/{mine}/cancel", json={"paths": [shared, own]}).status_code == 200

    assert _states(api, mine) == {shared: "CANCELLED", own: "CANCELLED"}
    assert _states(api, theirs) == {shared: "SUBMITTED"}
    with session_factory() as session:
        states = dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.state)).all())
        pending = session.scalar(
            select(func.count()).select_from(RequestFile).where(RequestFile.state == "PENDING")
        )
    assert states == {shared: FileState.QUEUED.value, own: FileState.CANCELLED.value}
    assert pending == 1

    # The cancelled file is asked for again: the same row is queued anew, the old answer stays.
    again = stage(api, [own])
    assert _states(api, again) == {own: "SUBMITTED"}
    assert _states(api, mine) == {shared: "CANCELLED", own: "CANCELLED"}
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(QueuedFileRow)) == 2
        row = session.scalars(select(QueuedFileRow).where(QueuedFileRow.path == own)).one()
        assert row.state == FileState.QUEUED.value
        assert row.finished_at is None
