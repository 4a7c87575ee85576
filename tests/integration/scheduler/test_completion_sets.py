"""Set-based completion: many events of one batch applied in a few statements, each row changed once, with
the results the events applied one by one would have; on both databases."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.orm import Session, sessionmaker

from carousel.completion.apply import apply_events
from carousel.db.engine import transaction
from carousel.db.models import Mount, Recall, RequestFile, StageRequest, TapeQueueDelta
from hsm_adapters.base import Event, EventKind
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.test_completion import RETRY, Hsm, apply, handed_over, rows


def paths(count: int, prefix: str = "/f") -> list[str]:
    return [f"{prefix}{n:04d}" for n in range(count)]


def reads(hsm: Hsm, ids: dict[str, int], batch: str, drive: str, start_s: float) -> list[Event]:
    """A mount of T1 on `drive` reading every file (started, then on disk), then its unmount."""
    events = [hsm.event(EventKind.MOUNTED, start_s, tape="T1", drive=drive)]
    for n, file_id in enumerate(ids.values()):
        at = start_s + 1 + n
        common: dict[str, Any] = {"tape": "T1", "drive": drive, "file_key": str(file_id), "batch_key": batch}
        events.append(hsm.event(EventKind.FILE_STARTED, at, **common))
        events.append(hsm.event(EventKind.FILE_STAGED, at + 0.5, bytes=100, **common))
    events.append(hsm.event(EventKind.UNMOUNTED, start_s + 2 + len(ids), tape="T1", drive=drive))
    return events


@contextmanager
def statements(factory: sessionmaker[Session]) -> Iterator[list[str]]:
    """The statements sent to the database meanwhile (an executemany counts once)."""
    seen: list[str] = []
    bind = factory.kw["bind"]
    engine = bind.engine if hasattr(bind, "engine") else bind

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


def test_a_batch_of_many_files_started_and_staged_ends_them_all(session_factory):
    ids = handed_over(session_factory, "b1", paths(120))
    report = apply(session_factory, reads(Hsm(), ids, "b1", "d0", 10))
    assert (report.applied, report.staged, report.mounts, report.stale) == (242, 120, 1, [])
    state = rows(session_factory)
    assert {row.state for row in state.values()} == {"STAGED"}
    first = state["/f0000"]
    assert (first.started_at, first.finished_at) == (T0 + timedelta(seconds=11), T0 + timedelta(seconds=11.5))
    with session_factory() as session:
        mount = session.scalars(select(Mount)).one()
        assert (mount.files, mount.bytes, mount.drive) == (120, 12_000, "d0")
        assert (mount.mounted_at, mount.unmounted_at) == (
            T0 + timedelta(seconds=10),
            T0 + timedelta(seconds=132),
        )
        recalls = session.scalars(select(Recall)).all()
        assert {(r.outcome, r.bytes, r.drive) for r in recalls} == {("STAGED", 100, "d0")}
        assert all(r.started_at is not None and r.finished_at is not None for r in recalls)
        links = session.scalars(select(RequestFile)).all()
        assert {link.state for link in links} == {"COMPLETED"}
        last = max(links, key=lambda link: link.ordinal)
        assert last.started_at == T0 + timedelta(seconds=11 + 119)  # its recall's own start
        request = session.scalars(select(StageRequest)).one()
        assert (request.state, request.started_at) == ("DONE", T0 + timedelta(seconds=11))
        assert request.completed_at == T0 + timedelta(seconds=11 + 119.5)
        # the tape queue's in-flight count is back to nothing
        in_flight = session.scalar(select(func.sum(TapeQueueDelta.files)).where(TapeQueueDelta.kind == "F"))
        assert in_flight == 0


def test_the_statements_of_a_batch_do_not_grow_with_its_events(session_factory):
    """On PostgreSQL one statement per kind of change for the batch; SQLite runs each over its rows
    (executemany), one call too. 10 files or 100: the same number of calls."""
    small = handed_over(session_factory, "b-small", paths(10, "/s"))
    large = handed_over(session_factory, "b-large", paths(100, "/l"))
    hsm = Hsm()
    with statements(session_factory) as for_small:
        apply(session_factory, reads(hsm, small, "b-small", "d0", 10))
    with statements(session_factory) as for_large:
        apply(session_factory, reads(hsm, large, "b-large", "d1", 500))
    assert len(for_large) == len(for_small)
    assert rows(session_factory)["/l0099"].state == "STAGED"


def test_the_tape_queue_trigger_fires_once_per_statement_on_postgresql(session_factory):
    ids = handed_over(session_factory, "b1", paths(50))
    with session_factory() as session:
        before = session.scalar(select(func.count()).select_from(TapeQueueDelta))
        dialect = session.get_bind().dialect.name
    apply(session_factory, reads(Hsm(), ids, "b1", "d0", 10))
    with session_factory() as session:
        added = session.scalars(
            select(TapeQueueDelta).where(TapeQueueDelta.id > 0).order_by(TapeQueueDelta.id)
        )
        new = list(added)[before:]
    assert sum(delta.files for delta in new) == -50  # 50 files left the in-flight count
    # PostgreSQL: one delta for the one statement that staged them; SQLite's row-level trigger: one per file
    assert len(new) == (1 if dialect == "postgresql" else 50)


def test_duplicates_in_a_batch_and_across_batches_change_nothing_twice(session_factory):
    ids = handed_over(session_factory, "b1", paths(5))
    events = reads(Hsm(), ids, "b1", "d0", 10)
    first = apply(session_factory, events + events[3:7])  # a stretch delivered twice in the same poll
    again = apply(session_factory, events)
    assert (first.applied, first.duplicates, first.staged) == (12, 4, 5)
    assert (again.applied, again.duplicates, again.staged) == (0, 12, 0)
    with session_factory() as session:
        mount = session.scalars(select(Mount)).one()
        assert (mount.files, mount.bytes) == (5, 500)  # each read counted once


def test_mixed_kinds_in_one_batch_land_in_event_order(session_factory):
    ids = handed_over(session_factory, "b1", ["/ok", "/bad", "/late", "/gone"])
    hsm = Hsm()

    def on(kind: EventKind, at: float, path: str, **fields: Any) -> Event:
        return hsm.event(kind, at, tape="T1", drive="d0", file_key=str(ids[path]), batch_key="b1", **fields)

    events = [
        hsm.event(EventKind.MOUNTED, 1, tape="T1", drive="d0"),
        on(EventKind.FILE_STARTED, 2, "/ok"),
        on(EventKind.FILE_STARTED, 3, "/bad"),
        on(EventKind.FILE_STAGED, 4, "/ok", bytes=100),
        on(EventKind.FILE_FAILED, 5, "/bad", reason="media error", retryable=False),
        on(EventKind.FILE_STARTED, 6, "/late"),
        hsm.event(EventKind.UNMOUNTED, 7, tape="T1", drive="d0"),
        hsm.event(EventKind.MOUNTED, 8, tape="T1", drive="d0"),  # the same tape again, same drive
        on(EventKind.FILE_STAGED, 9, "/late", bytes=100),
        on(EventKind.FILE_STAGED, 9.5, "/late", bytes=100),  # a second end: stale
        on(EventKind.FILE_CANCELLED, 10, "/gone"),
    ]
    report = apply(session_factory, events)
    assert (report.staged, report.failed, report.requeued, report.mounts) == (2, 1, 1, 2)
    assert len(report.stale) == 1
    state = rows(session_factory)
    assert {p: state[p].state for p in state} == {
        "/ok": "STAGED",
        "/bad": "FAILED",
        "/late": "STAGED",
        "/gone": "QUEUED",
    }
    assert state["/late"].started_at == T0 + timedelta(seconds=6)
    with session_factory() as session:
        mounts = session.scalars(select(Mount).order_by(Mount.mounted_at)).all()
        assert [(m.files, m.bytes, m.unmounted_at) for m in mounts] == [
            (1, 100, T0 + timedelta(seconds=7)),
            (2, 200, None),  # the reads after the remount count on the second mount, a late one too
        ]
        recalls = {r.file_id: r for r in session.scalars(select(Recall))}
        assert (recalls[ids["/bad"]].outcome, recalls[ids["/bad"]].reason) == ("FAILED", "media error")
        assert recalls[ids["/bad"]].started_at == T0 + timedelta(seconds=3)
        assert recalls[ids["/late"]].finished_at == T0 + timedelta(seconds=9)  # the first end
        assert recalls[ids["/gone"]].outcome == "CANCELLED"


def test_a_files_start_and_end_in_one_batch_set_both(session_factory):
    ids = handed_over(session_factory, "b1", ["/f1"])
    hsm = Hsm()
    key = {"tape": "T1", "drive": "d3", "file_key": str(ids["/f1"]), "batch_key": "b1"}
    apply(
        session_factory,
        [
            hsm.event(EventKind.FILE_STARTED, 20, **key),
            hsm.event(EventKind.FILE_STAGED, 25, bytes=100, checksum="0000abcd", **key),
        ],
    )
    row = rows(session_factory)["/f1"]
    assert (row.state, row.started_at, row.finished_at) == (
        "STAGED",
        T0 + timedelta(seconds=20),
        T0 + timedelta(seconds=25),
    )
    assert row.checksum == "0000abcd"
    with session_factory() as session:
        recall = session.scalars(select(Recall)).one()
        assert (recall.started_at, recall.finished_at, recall.drive) == (
            T0 + timedelta(seconds=20),
            T0 + timedelta(seconds=25),
            "d3",
        )
        link = session.scalars(select(RequestFile)).one()
        assert (link.state, link.started_at) == ("COMPLETED", T0 + timedelta(seconds=20))
        request = session.scalars(select(StageRequest)).one()
        assert (request.started_at, request.state) == (T0 + timedelta(seconds=20), "DONE")


def test_the_set_based_path_equals_the_events_applied_one_by_one(session_factory):
    """The same events applied in one batch and one event per batch leave the same rows."""
    together = handed_over(session_factory, "bt", paths(8, "/t"))
    alone = handed_over(session_factory, "ba", paths(8, "/a"))
    apply(session_factory, reads(Hsm(), together, "bt", "d0", 10))
    for single in reads(Hsm(), alone, "ba", "d1", 10):
        with transaction(session_factory) as session:
            apply_events(session, "one-by-one", [single], RETRY)
    state = rows(session_factory)

    def seen(path: str) -> tuple[object, ...]:
        row = state[path]
        return (row.state, row.started_at, row.finished_at, row.on_disk)

    assert [seen(f"/t{n:04d}") for n in range(8)] == [seen(f"/a{n:04d}") for n in range(8)]
    with session_factory() as session:
        mounts = {
            m.drive: (m.files, m.bytes, m.mounted_at, m.unmounted_at) for m in session.scalars(select(Mount))
        }
    assert mounts["d0"] == mounts["d1"]
