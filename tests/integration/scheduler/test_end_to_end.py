"""Intake and scheduler together on both databases: requests come in through the intake use cases, the cycle
feeds the simulated library in virtual time, and every requester sees its answer."""

from __future__ import annotations

import random
from collections import Counter

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.callers import ANONYMOUS
from carousel.domain.clock import ManualClock
from carousel.intake import cancel as cancel_case
from carousel.intake.model import Api, StageOrder
from carousel.intake.submit import submit
from hsm_adapters.simulated.adapter import SimulatedAdapter
from tests.integration.scheduler.support import file_states, make_cycle, run_until


def submit_paths(
    factory: sessionmaker[Session], adapter: SimulatedAdapter, clock: ManualClock, paths: list[str]
) -> str:
    order = StageOrder(paths=tuple(paths), api=Api.NATIVE, list_field="paths", path_field="paths[{}]")
    with transaction(factory) as session:
        return submit(
            session, adapter, clock, ANONYMOUS, order, max_files=1000, max_path_bytes=4096
        ).request_id


def all_requests_done(factory: sessionmaker[Session]):
    def check() -> bool:
        with factory() as session:
            return not session.scalar(
                select(func.count()).select_from(StageRequest).where(StageRequest.state == "ACTIVE")
            )

    return check


def test_fifty_overlapping_requests_recall_each_file_once(session_factory, make_adapter, clock):
    adapter = make_adapter()
    pool = list(adapter.library.catalogue)[:30]
    rng = random.Random(50)
    wanted = [rng.sample(pool, 10) for _ in range(50)]
    cycle = make_cycle(session_factory, adapter, clock)

    requests = []
    for n, paths in enumerate(wanted):
        requests.append(submit_paths(session_factory, adapter, clock, paths))
        if n % 10 == 9:  # later requests arrive while earlier recalls are queued or being read
            cycle.run_once()
            clock.advance(5)
    run_until(cycle, clock, all_requests_done(session_factory))

    distinct = {p for paths in wanted for p in paths}
    with session_factory() as session:
        recalls_per_file = Counter(session.scalars(select(Recall.file_id)).all())
        files = session.scalar(select(func.count()).select_from(QueuedFileRow))
        links = Counter(session.scalars(select(RequestFile.state)).all())
    assert files == len(distinct)
    assert len(recalls_per_file) == len(distinct)
    assert set(recalls_per_file.values()) == {1}  # exactly one recall per distinct file
    assert adapter.library.stats().files_staged == len(distinct)  # and one read in the library
    assert links == {"COMPLETED": 50 * 10}
    assert set(file_states(session_factory).values()) == {"STAGED"}


def test_one_requester_cancelling_leaves_the_others_claim(session_factory, make_adapter, clock):
    adapter = make_adapter(drives=1)
    paths = list(adapter.library.catalogue)[:6]
    keeper = submit_paths(session_factory, adapter, clock, paths[:3])
    leaver = submit_paths(session_factory, adapter, clock, paths)
    cycle = make_cycle(session_factory, adapter, clock)
    assert cycle.run_once().files_submitted == 6

    with transaction(session_factory) as session:
        cancel_case.cancel(session, clock, ANONYMOUS, leaver, None, max_path_bytes=4096)
    report = cycle.run_once()
    assert report.cancels_pushed == 3  # only the files nobody else waits for
    run_until(cycle, clock, all_requests_done(session_factory))

    states = file_states(session_factory)
    assert [states[p] for p in paths] == ["STAGED"] * 3 + ["CANCELLED"] * 3
    with session_factory() as session:
        keeper_links = session.scalars(
            select(RequestFile.state).where(RequestFile.request_id == keeper)
        ).all()
        leaver_links = session.scalars(
            select(RequestFile.state).where(RequestFile.request_id == leaver)
        ).all()
    assert keeper_links == ["COMPLETED"] * 3
    assert leaver_links == ["CANCELLED"] * 6
    assert adapter.library.stats().files_staged == 3
