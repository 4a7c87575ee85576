"""Fair share accounting over the mount history, on PostgreSQL and SQLite."""

from __future__ import annotations

import math
from datetime import timedelta

from sqlalchemy import update

from carousel.db.engine import transaction
from carousel.db.models import Mount, QueuedFileRow, Recall
from carousel.db.usage_queries import GroupUsageLedger, group_usage
from carousel.scheduler.queue_store import DatabaseQueueStore
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued


def at(seconds: float):
    return T0 + timedelta(seconds=seconds)


def history(factory) -> None:
    """Mount 1 (drive d1, 0..1000 s) read 3 atlas files and 1 cms file; mount 2 (d2, 500 s .. still mounted)
    read 2 cms files; mount 3 ended long ago; a recall on d1 after mount 1 ended belongs to no mount."""
    files = [
        queued("/a1", "A", 1, T0, grp="atlas"),
        queued("/a2", "A", 2, T0, grp="atlas"),
        queued("/a3", "A", 3, T0, grp="atlas"),
        queued("/a4", "A", 4, T0, grp="cms"),
        queued("/b1", "B", 1, T0, grp="cms"),
        queued("/b2", "B", 2, T0, grp="cms"),
        queued("/c1", "C", 1, T0, grp="star"),
        queued("/a5", "A", 5, T0, grp="star"),
    ]
    add_request(factory, files, T0)
    with transaction(factory) as session:
        session.add_all(
            [
                Mount(tape="A", drive="d1", mounted_at=at(0), unmounted_at=at(1000), files=4, bytes=0),
                Mount(tape="B", drive="d2", mounted_at=at(500), unmounted_at=None, files=2, bytes=0),
                Mount(
                    tape="C", drive="d1", mounted_at=at(-90_000), unmounted_at=at(-89_000), files=1, bytes=0
                ),
            ]
        )
        started = {"/a1": 0, "/a2": 100, "/a3": 200, "/a4": 300, "/b1": 500, "/b2": 600, "/c1": -89_500}
        drives = {"/b1": "d2", "/b2": "d2"}
        ids = {f.path: f.id for f in files}
        session.add_all(
            Recall(
                file_id=ids[path],
                batch_key="k",
                tape=path[1].upper(),
                submitted_at=at(s - 1),
                started_at=at(s),
                drive=drives.get(path, "d1"),
            )
            for path, s in started.items()
        )
        # read on tape A's drive after that mount ended: no mount to charge
        session.add(
            Recall(
                file_id=ids["/a5"],
                batch_key="k",
                tape="A",
                submitted_at=at(1500),
                started_at=at(2000),
                drive="d1",
            )
        )


def test_mount_time_is_split_by_the_files_each_group_read(session_factory):
    history(session_factory)
    with session_factory() as session:
        usage = {u.group: u.drive_s for u in group_usage(session, at(2500), window_s=86_400)}
    assert set(usage) == {"atlas", "cms"}  # star's mount ended before the window
    assert math.isclose(usage["atlas"], 1000 * 3 / 4)
    assert math.isclose(usage["cms"], 1000 * 1 / 4 + 2000)  # the open mount counts up to now


def test_the_window_clips_mounts(session_factory):
    history(session_factory)
    with session_factory() as session:
        usage = {u.group: u.drive_s for u in group_usage(session, at(2500), window_s=2000)}
    # the window starts at 500 s: mount 1 counts 500 s of its 1000
    assert math.isclose(usage["atlas"], 500 * 3 / 4)
    assert math.isclose(usage["cms"], 500 / 4 + 2000)


def test_the_database_store_hands_usage_to_the_snapshot(session_factory):
    history(session_factory)
    demand = DatabaseQueueStore(session_factory).demand(at(2500))
    assert [u.group for u in demand.usage] == ["atlas", "cms"]
    assert {t.tape for t in demand.tapes} == {"A", "B", "C"}


def usage_of(ledger, session, seconds: float, window_s: float = 86_400) -> dict[str, float]:
    return {u.group: u.drive_s for u in ledger(session, at(seconds), window_s=window_s)}


def test_the_ledger_reads_a_closed_mount_once_and_follows_the_open_ones(session_factory):
    history(session_factory)
    ledger = GroupUsageLedger()
    with session_factory() as session:
        assert usage_of(ledger, session, 2500) == {
            u.group: u.drive_s for u in group_usage(session, at(2500), window_s=86_400)
        }
    with transaction(session_factory) as session:
        # the closed mount's files now belong to another group: the ledger keeps what the mount read for
        session.execute(update(QueuedFileRow).where(QueuedFileRow.grp == "atlas").values(grp="lhcb"))
        # the open mount (tape B on d2) closes at 3000 s
        session.execute(update(Mount).where(Mount.tape == "B").values(unmounted_at=at(3000)))
    with session_factory() as session:
        usage = usage_of(ledger, session, 4000)
        fresh = {u.group: u.drive_s for u in group_usage(session, at(4000), window_s=86_400)}
    assert math.isclose(usage["atlas"], 1000 * 3 / 4)  # read once, while it was closed already
    assert math.isclose(usage["cms"], 1000 / 4 + 2500)  # the mount of B counted to its close, not to now
    assert "lhcb" in fresh and "atlas" not in fresh  # the one-off query reads the history again


def test_the_ledger_forgets_mounts_that_left_the_window(session_factory):
    history(session_factory)
    ledger = GroupUsageLedger()
    with session_factory() as session:
        usage_of(ledger, session, 2500)
        later = usage_of(ledger, session, 1000 + 86_400 + 1)  # mount 1 ended before this window
    assert "atlas" not in later
    assert set(later) == {"cms"}
