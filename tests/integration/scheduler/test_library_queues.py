"""One library's queue in the database (docs/decisions.md §17), on PostgreSQL and SQLite: the same tape ID in
two libraries is two tapes; a library's snapshot and claims (of any tape too) hold its own files only; its
hand-overs record recalls of its own; fair-share usage is the site's, each library's drive time by its
weight, and a mount (in fair share and in the reports) has the reads of its own library only."""

from __future__ import annotations

import math
from datetime import timedelta

from sqlalchemy import select

from carousel.completion.apply import apply_events
from carousel.db.engine import transaction
from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.db.report_queries import mount_sessions
from carousel.db.usage_queries import group_usage
from carousel.domain.completion import RetryRule
from carousel.domain.planning import ReadOrder, Selection
from carousel.domain.queue import HandedOver
from carousel.scheduler.queue_store import DatabaseQueueStore
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued


def at(seconds: float):
    return T0 + timedelta(seconds=seconds)


def in_library(row: QueuedFileRow, library: str) -> QueuedFileRow:
    row.library = library
    return row


def two_libraries(factory) -> None:
    """Tape T1 in library new (2 atlas files) and tape T1 in library old (1 cms file); T2 in old (1 cms)."""
    add_request(
        factory,
        [
            in_library(queued("/n1", "T1", 10, at(0), grp="atlas"), "new"),
            in_library(queued("/n2", "T1", 20, at(1), grp="atlas"), "new"),
            in_library(queued("/o1", "T1", 5, at(2), grp="cms"), "old"),
            in_library(queued("/o2", "T2", 5, at(3), grp="cms"), "old"),
        ],
        T0,
    )


def test_a_library_sees_its_own_tapes_and_claims_only_its_own_files(session_factory):
    two_libraries(session_factory)
    new = DatabaseQueueStore(session_factory, library="new")
    old = DatabaseQueueStore(session_factory, library="old")
    site = DatabaseQueueStore(session_factory, library=None)

    assert [(t.tape, t.files) for t in new.demand(at(10)).tapes] == [("T1", 2)]
    assert sorted((t.tape, t.files) for t in old.demand(at(10)).tapes) == [("T1", 1), ("T2", 1)]
    assert sum(t.files for t in site.demand(at(10)).tapes) == 4

    keys = iter(["k1", "k2"])
    claims = old.claim(
        [Selection(tape=None, max_files=10, order=ReadOrder.ARRIVAL)], lambda: next(keys), at(10)
    )
    assert sorted(f.path for _, _, files in claims for f in files) == ["/o1", "/o2"]
    assert [t.tape for t in new.demand(at(10)).tapes] == ["T1"]  # new's T1 is still queued
    assert old.demand(at(10)).tapes == ()

    claimed = [f.id for _, _, files in claims for f in files]
    assert old.handed_over([HandedOver("k1", "T1", tuple(claimed))], [], at(11)) == (2, 0)
    with session_factory() as session:
        assert session.execute(select(Recall.library, Recall.tape)).all() == [("old", "T1"), ("old", "T1")]
    assert new.demand(at(12)).in_flight == 0
    assert old.demand(at(12)).in_flight == 2


def test_usage_is_the_sites_in_reference_drive_seconds(session_factory):
    two_libraries(session_factory)
    with transaction(session_factory) as session:
        ids = dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.id)).all())
        # both libraries mounted their T1 on a drive named d1 over the same 1000 s
        session.add_all(
            [
                Mount(tape="T1", library="new", drive="d1", mounted_at=at(0), unmounted_at=at(1000)),
                Mount(tape="T1", library="old", drive="d1", mounted_at=at(0), unmounted_at=at(1000)),
            ]
        )
        session.add_all(
            Recall(
                file_id=ids[path],
                library=library,
                batch_key="k",
                tape="T1",
                submitted_at=at(0),
                started_at=at(100),
                drive="d1",
            )
            for path, library in (("/n1", "new"), ("/o1", "old"))
        )
    with session_factory() as session:
        usage = {
            u.group: u.drive_s for u in group_usage(session, at(2000), 86_400, {"new": 1.0, "old": 0.75})
        }
        unweighted = {u.group: u.drive_s for u in group_usage(session, at(2000), 86_400)}
    # each mount charges its own library's read only, not the other's on the same tape ID and drive name
    assert math.isclose(usage["atlas"], 1000.0)
    assert math.isclose(usage["cms"], 750.0)
    assert math.isclose(unweighted["cms"], 1000.0)
    store = DatabaseQueueStore(session_factory, library="new", usage_weights={"new": 1.0, "old": 0.75})
    assert {u.group: u.drive_s for u in store.demand(at(2000)).usage} == usage


def test_a_librarys_events_open_and_close_its_own_mounts(session_factory):
    retry = RetryRule(max_attempts=3, backoff_s=0)
    with transaction(session_factory) as session:
        for library in ("new", "old"):
            mounted = Event(EventKind.MOUNTED, at(0), seq=1, tape="T1", drive="d1")
            apply_events(session, f"{library}:stream", [mounted], retry, library=library)
        unmounted = Event(EventKind.UNMOUNTED, at(50), seq=2, tape="T1", drive="d1")
        apply_events(session, "old:stream", [unmounted], retry, library="old")
    with session_factory() as session:
        rows = session.execute(select(Mount.library, Mount.tape, Mount.unmounted_at).order_by(Mount.library))
        assert rows.all() == [("new", "T1", None), ("old", "T1", at(50))]


def test_the_reports_mount_sessions_count_each_librarys_own_reads(session_factory):
    two_libraries(session_factory)
    with transaction(session_factory) as session:
        ids = dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.id)).all())
        session.add_all(
            Mount(tape="T1", library=library, drive="d1", mounted_at=at(0), unmounted_at=at(1000))
            for library in ("new", "old")
        )
        session.add_all(
            Recall(
                file_id=ids[path],
                library=library,
                batch_key="k",
                tape="T1",
                submitted_at=at(0),
                started_at=at(100),
                finished_at=at(200),
                drive="d1",
            )
            for path, library in (("/n1", "new"), ("/n2", "new"), ("/o1", "old"))
        )
    with session_factory() as session:
        sessions = mount_sessions(session, at(0), at(2000))
    assert sorted(s.reads for s in sessions) == [1, 2]  # not 3 and 3
