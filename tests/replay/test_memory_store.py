"""The replay's memory store keeps the queue semantics of the database store (see
tests/integration/scheduler/test_queue_queries.py for the same rules over SQL)."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta

from carousel.domain.completion import RetryRule
from carousel.domain.planning import ReadOrder, Selection
from carousel.domain.queue import HandedOver
from carousel.domain.states import FileState
from carousel.replay.memory_store import MemoryQueueStore
from hsm_adapters.base import Event, EventKind

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_seq = itertools.count(1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def store(**kw) -> MemoryQueueStore:
    return MemoryQueueStore(RetryRule(max_attempts=2, backoff_s=100.0), **kw)


def add(s: MemoryQueueStore, path: str, tape: str, position: int, t: float = 0, size: int = 10, **kw) -> int:
    return s.add(
        path=path,
        tape=tape,
        position=position,
        size=size,
        group=kw.get("group", "default"),
        priority=kw.get("priority", 0),
        at=at(t),
    )


def keys():
    counter = itertools.count(1)
    return lambda: f"k{next(counter)}"


def event(kind: EventKind, t: float, file_id: int | None = None, **kw) -> Event:
    return Event(
        kind=kind,
        at=at(t),
        seq=next(_seq),
        tape=kw.get("tape", "A"),
        drive=kw.get("drive", "d0"),
        file_key=None if file_id is None else str(file_id),
        batch_key=kw.get("batch"),
        bytes=kw.get("bytes", 0),
        retryable=kw.get("retryable", True),
    )


def test_demand_is_per_tape_with_per_group_ages_and_tapes_in_flight():
    s = store()
    add(s, "/a1", "A", 100, t=5, group="atlas", priority=1)
    add(s, "/a2", "A", 50, t=1, group="cms", priority=7)
    add(s, "/b1", "B", 10, t=0)
    s.claim([Selection(tape="B", max_files=1)], keys(), at(10))
    demand = s.demand(at(10))
    (a,) = demand.tapes
    assert (a.tape, a.files, a.bytes, a.oldest, a.max_priority) == ("A", 2, 20, at(1), 7)
    assert [(g.group, g.files, g.oldest, g.max_priority) for g in a.groups] == [
        ("atlas", 1, at(5), 1),
        ("cms", 1, at(1), 7),
    ]
    assert [(t.tape, t.files) for t in demand.in_flight_tapes] == [("B", 1)]
    assert demand.in_flight == 1


def test_claims_follow_the_database_order_and_budgets():
    s = store()
    for p in (500, 100, 300, 200, 400):
        add(s, f"/a{p}", "A", p, t=-p)
    add(s, "/b1", "B", 1, t=0)
    [(_, key, files)] = s.claim([Selection(tape="A", max_files=3)], keys(), at(0))
    assert [f.path for f in files] == ["/a100", "/a200", "/a300"] and key == "k1"
    [(_, _, files)] = s.claim([Selection(tape=None, max_files=2, order=ReadOrder.ARRIVAL)], keys(), at(0))
    assert [f.path for f in files] == ["/a500", "/a400"]  # oldest arrivals first
    [(_, _, files)] = s.claim([Selection(tape="B", max_files=5, max_bytes=1)], keys(), at(0))
    assert [f.path for f in files] == ["/b1"]  # a byte budget never leaves a claim empty
    assert s.claim([Selection(tape=None, max_files=5, service_class="raw")], keys(), at(0))[0][2] == []


def test_a_claim_narrowed_to_a_group_and_refused_batches_go_back():
    s = store()
    for p in range(1, 7):
        add(s, f"/a{p}", "A", p, group="atlas" if p % 2 else "cms")
    [(_, key, files)] = s.claim([Selection(tape="A", max_files=10, group="cms")], keys(), at(0))
    assert [f.path for f in files] == ["/a2", "/a4", "/a6"]
    submitted, returned = s.handed_over([HandedOver(key, "A", (files[0].id,))], [files[1].id], at(1))
    assert (submitted, returned) == (1, 1)
    assert [(g.group, g.files) for g in s.demand(at(1)).tapes[0].groups] == [("atlas", 3), ("cms", 1)]


def test_failed_reads_wait_for_a_later_mount_then_fail_with_the_last_attempt():
    s = store()
    row = add(s, "/a1", "A", 1)
    [(_, key, files)] = s.claim([Selection(tape="A", max_files=1)], keys(), at(0))
    s.handed_over([HandedOver(key, "A", (files[0].id,))], [], at(0))
    s.apply([event(EventKind.FILE_FAILED, 50, files[0].id, batch=key)])
    assert s.demand(at(149)).tapes == ()  # backing off until 150 s
    assert s.next_due() == at(150)
    assert s.demand(at(150)).tapes[0].files == 1
    [(_, key2, again)] = s.claim([Selection(tape="A", max_files=1)], keys(), at(150))
    s.handed_over([HandedOver(key2, "A", (again[0].id,))], [], at(150))
    s.apply([event(EventKind.FILE_FAILED, 200, again[0].id, batch=key2)])
    assert s.rows[row].state is FileState.FAILED and s.active == 0


def test_a_path_asked_again_joins_its_recall_or_is_answered_from_disk():
    s = store()
    first = add(s, "/a1", "A", 1)
    second = add(s, "/a1", "A", 1, t=3, priority=5)
    assert s.demand(at(3)).tapes[0].max_priority == 5
    [(_, key, files)] = s.claim([Selection(tape="A", max_files=1)], keys(), at(3))
    s.handed_over([HandedOver(key, "A", (files[0].id,))], [], at(3))
    s.apply(
        [
            event(EventKind.MOUNTED, 40),
            event(EventKind.FILE_STARTED, 40, files[0].id, batch=key),
            event(EventKind.FILE_STAGED, 60, files[0].id, batch=key, bytes=10),
        ]
    )
    assert s.rows[first].end == s.rows[second].end == at(60)
    assert s.rows[first].mount == 1 and s.mounts[0].requested == at(3) and s.mounts[0].files == 1
    later = add(s, "/a1", "A", 1, t=100)
    assert (s.rows[later].state, s.rows[later].end) == (FileState.STAGED, at(100))


def test_usage_splits_each_mount_by_the_files_it_started():
    s = store(track_usage=True, usage_window_s=1000)
    ids = []
    for n, group in enumerate(["atlas", "atlas", "cms"]):
        add(s, f"/a{n}", "A", n, group=group)
    [(_, key, files)] = s.claim([Selection(tape="A", max_files=3)], keys(), at(0))
    ids = [f.id for f in files]
    s.handed_over([HandedOver(key, "A", tuple(ids))], [], at(0))
    s.apply(
        [event(EventKind.MOUNTED, 100)]
        + [event(EventKind.FILE_STARTED, 100 + i, f, batch=key) for i, f in enumerate(ids)]
    )
    usage = {u.group: u.drive_s for u in s.demand(at(400)).usage}
    assert math.isclose(usage["atlas"], 300 * 2 / 3) and math.isclose(usage["cms"], 100)
    s.apply([event(EventKind.UNMOUNTED, 500)])
    late = {u.group: u.drive_s for u in s.demand(at(1300)).usage}  # window from 300 s: 200 s of the mount
    assert math.isclose(late["atlas"], 200 * 2 / 3)
    assert store().demand(at(0)).usage == ()  # kept only when asked for


def test_a_file_given_back_is_claimed_once_in_arrival_order():
    # A refused hand-over queues the file again while its first arrival entry still waits to be pruned:
    # an arrival-order claim must see it once (it was taken twice, and the second removal failed).
    s = store()
    add(s, "/a", "A", 100, t=0)
    add(s, "/b", "B", 100, t=1)
    arrival = Selection(tape=None, max_files=10, order=ReadOrder.ARRIVAL)
    first = s.claim([arrival], keys(), at(2))
    assert [f.path for f in first[0][2]] == ["/a", "/b"]
    assert s.handed_over([], [f.id for f in first[0][2]], at(3)) == (0, 2)
    again = s.claim([arrival], keys(), at(4))
    assert [f.path for f in again[0][2]] == ["/a", "/b"]
    assert s.demand(at(5)).tapes == ()
