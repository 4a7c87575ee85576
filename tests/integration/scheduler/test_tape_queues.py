"""The tape queues the triggers keep give the snapshot the same answer as reading every file, whatever was
done to the files, on PostgreSQL and SQLite."""

from __future__ import annotations

import random
from datetime import timedelta

from sqlalchemy import and_, case, delete, func, or_, select, update
from sqlalchemy.orm import Session

from carousel.db import queue_queries as q
from carousel.db.completion_queries import finish_file, requeue_for_retry
from carousel.db.demand_assembly import DemandAssembly, SiteAssemblies
from carousel.db.engine import transaction
from carousel.db.models import QueuedFileRow, RequestFile, TapeQueue, TapeQueueDelta
from carousel.db.tape_queue_queries import fold_deltas
from carousel.domain.planning import ReadOrder, Selection
from carousel.domain.queue import HandedOver
from carousel.domain.states import FILE_IN_FLIGHT, STAGE, FileState
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued

F = QueuedFileRow


def by_reading_every_file(session: Session, now):
    """The snapshot as the files say it, one GROUP BY over all of them."""
    kind = case((F.state == FileState.QUEUED.value, "Q"), else_="F").label("kind")
    rows = session.execute(
        select(
            F.tape,
            kind,
            F.service_class,
            F.grp,
            func.count(),
            func.coalesce(func.sum(F.size_bytes), 0),
            func.min(F.queued_at),
            func.max(F.priority),
            func.sum(case((F.attempts > 0, 1), else_=0)),
        )
        .where(F.tape.is_not(None))
        .where(
            or_(
                F.state.in_([s.value for s in FILE_IN_FLIGHT]),
                and_(F.state == "QUEUED", or_(F.not_before.is_(None), F.not_before <= now)),
            )
        )
        .group_by(F.tape, kind, F.service_class, F.grp)
    ).all()
    queued = {(r[0], r[2], r[3]): (r[4], int(r[5]), r[6], r[7]) for r in rows if r[1] == "Q"}
    flying: dict = {}
    for r in rows:
        if r[1] == "F":
            files, size = flying.get((r[0], r[3]), (0, 0))
            flying[(r[0], r[3])] = (files + r[4], size + int(r[5]))
    return queued, flying


def as_folded(demand):
    queued = {}
    for tape in demand.tapes:
        for group in tape.groups:
            queued[(tape.tape, tape.service_class, group.group)] = (
                group.files,
                group.bytes,
                group.oldest,
                group.max_priority,
            )
    flying = {(t.tape, g.group): (g.files, g.bytes) for t in demand.in_flight_tapes for g in t.groups}
    return queued, flying


def test_the_folded_queues_match_the_files_after_random_work(session_factory):
    """Through one store's kept copy of the tape queues (its own folds applied to it, the table read again
    when another fold came between) as through a fresh read."""
    rng = random.Random(7)
    kept = DemandAssembly()
    ids: list[int] = []
    now = T0
    for round_number in range(12):
        now += timedelta(seconds=100)
        files = [
            queued(
                f"/r{round_number}/{n}",
                rng.choice("ABCD"),
                rng.randrange(10**6),
                now - timedelta(seconds=rng.randrange(500)),
                size=rng.randrange(1, 10**9),
                grp=rng.choice(["atlas", "cms"]),
                priority=rng.randrange(4),
            )
            for n in range(rng.randrange(1, 15))
        ]
        add_request(session_factory, files, now)
        ids.extend(f.id for f in files)
        with transaction(session_factory) as session:
            tape = rng.choice("ABCD")
            order = rng.choice([ReadOrder.POSITION, ReadOrder.ARRIVAL])
            claimed = q.claim(
                session, Selection(tape=tape, max_files=rng.randrange(1, 6), order=order), "k", now
            )
            q.record_handed_over(session, [HandedOver("k", tape, tuple(f.id for f in claimed))], now)
        with transaction(session_factory) as session:
            submitted = list(session.scalars(select(F.id).where(F.state == "SUBMITTED")))
            for file_id in rng.sample(submitted, min(len(submitted), 3)):
                if rng.random() < 0.5:
                    finish_file(session, file_id, STAGE, now)
                else:  # a failed read backing off, some already due
                    later = now + timedelta(seconds=rng.choice([-50, 300]))
                    requeue_for_retry(session, file_id, attempts=1, not_before=later, error="read error")
            victim = rng.choice(ids)
            session.execute(update(F).where(F.id == victim, F.state == "QUEUED").values(priority=9))
            if round_number == 6:  # a file leaves the table altogether
                gone = rng.choice(ids)
                session.execute(delete(RequestFile).where(RequestFile.file_id == gone))
                session.execute(delete(F).where(F.id == gone))
        if round_number % 3 == 2:  # someone else folds first (an outlook): the kept copy is stale
            with transaction(session_factory) as session:
                fold_deltas(session)
        with transaction(session_factory) as session:
            demand = q.read_demand(session, now, kept)
            assert as_folded(demand) == by_reading_every_file(session, now), f"round {round_number}"
            assert demand == q.read_demand(session, now), "a kept copy answers as a fresh read"
            assert session.scalar(select(func.count()).select_from(TapeQueueDelta)) == 0
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(TapeQueue)) > 0


def test_the_libraries_of_a_site_share_each_fold_instead_of_reading_the_table_again(session_factory):
    """A site cycle snapshots its libraries in turn: each library's kept copy takes the folds of the others
    (one read of the table each, the first), answers as a fresh read of its library, and every copy is read
    again after a snapshot whose transaction failed (its fold, shared, never committed)."""
    rng = random.Random(11)
    site = SiteAssemblies()
    kept = {name: DemandAssembly(name, site) for name in ("east", "west")}
    now = T0
    for round_number in range(8):
        now += timedelta(seconds=100)
        files = []
        for n in range(rng.randrange(2, 12)):
            row = queued(f"/s{round_number}/{n}", rng.choice("AB"), rng.randrange(10**6), now, size=n + 1)
            row.library = rng.choice(["east", "west"])  # tape A of east is not tape A of west
            files.append(row)
        add_request(session_factory, files, now)
        for name, assembly in kept.items():
            with transaction(session_factory) as session:
                demand = q.read_demand(session, now, assembly, name)
                assert demand == q.read_demand(session, now, library=name), f"{name}, round {round_number}"
    assert {name: a.reloads for name, a in kept.items()} == {"east": 1, "west": 1}
    more = queued("/after-failure", "A", 5, now, size=7)
    more.library = "west"
    add_request(session_factory, [more], now)
    try:
        with transaction(session_factory) as session:
            q.read_demand(session, now, kept["east"], "east")  # folds west's new delta, then fails
            raise RuntimeError("the snapshot's transaction fails")
    except RuntimeError:
        kept["east"].forget()
    for name, assembly in kept.items():
        with transaction(session_factory) as session:
            assert q.read_demand(session, now, assembly, name) == q.read_demand(session, now, library=name)
    assert {name: a.reloads for name, a in kept.items()} == {"east": 2, "west": 2}


def test_retries_are_counted_and_backing_off_files_left_out(session_factory):
    add_request(session_factory, [queued("/a1", "A", 1, T0), queued("/a2", "A", 2, T0)], T0)
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=2), "k", T0)
        q.record_handed_over(session, [HandedOver("k", "A", tuple(f.id for f in claimed))], T0)
        requeue_for_retry(
            session, claimed[0].id, attempts=1, not_before=T0 + timedelta(seconds=600), error="x"
        )
        requeue_for_retry(session, claimed[1].id, attempts=1, not_before=None, error="x")
    with transaction(session_factory) as session:
        (tape,) = q.read_demand(session, T0).tapes
        assert (tape.files, tape.retries) == (1, 1)  # the other backs off for ten minutes
    with transaction(session_factory) as session:
        (tape,) = q.read_demand(session, T0 + timedelta(seconds=600)).tapes
        assert (tape.files, tape.retries) == (2, 2)


def test_a_backlog_is_folded_a_bounded_number_of_deltas_at_a_time(session_factory):
    """Each fold takes at most its limit of deltas, oldest first; once the backlog is worked off the queues
    are what the files say."""
    for n in range(6):  # six requests, each leaving a delta for each of its tapes
        files = [queued(f"/b{n}/{tape}", tape, n, T0 + timedelta(seconds=n), priority=n) for tape in "ABCD"]
        add_request(session_factory, files, T0 + timedelta(seconds=n))
    with transaction(session_factory) as session:
        backlog = session.scalar(select(func.count()).select_from(TapeQueueDelta))
    assert backlog is not None and backlog >= 6
    folds = []
    while True:
        with transaction(session_factory) as session:
            folded = fold_deltas(session, limit=4)
        if not folded:
            break
        folds.append(folded)
    assert max(folds) == 4 and sum(folds) == backlog
    with transaction(session_factory) as session:
        assert as_folded(q.read_demand(session, T0)) == by_reading_every_file(session, T0)


def test_a_queue_that_meets_departures_before_arrivals_adds_up_in_the_end(session_factory):
    """Two folds at once may fold a file's departure before its arrival (the other fold holds it): the row
    goes below zero, the snapshot does not show it, and it is gone once both are folded."""
    key = {
        "library": "default",
        "tape": "A",
        "grp": "atlas",
        "service_class": "default",
        "kind": "Q",
        "retries": 0,
    }
    with transaction(session_factory) as session:
        session.add(TapeQueueDelta(**key, files=-1, bytes=-5, leaving_oldest=T0, leaving_priority=0))
    with transaction(session_factory) as session:
        assert q.read_demand(session, T0).tapes == ()
        assert session.scalar(select(TapeQueue.files)) == -1
    with transaction(session_factory) as session:
        session.add(TapeQueueDelta(**key, files=1, bytes=5, arriving_oldest=T0, arriving_priority=0))
    with transaction(session_factory) as session:
        assert fold_deltas(session) == 1
        assert session.scalar(select(func.count()).select_from(TapeQueue)) == 0
