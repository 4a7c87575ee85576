"""What fair share and tape-level policies read from the queue: per-group ages and priorities, the tapes in
flight with their groups, and claims narrowed to one group. PostgreSQL and SQLite."""

from __future__ import annotations

from datetime import timedelta

from carousel.db import queue_queries as q
from carousel.db.engine import transaction
from carousel.domain.planning import Selection
from carousel.domain.states import FileState
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued


def test_groups_carry_their_own_oldest_arrival_and_priority(session_factory):
    add_request(
        session_factory,
        [
            queued("/a1", "A", 100, T0 + timedelta(seconds=5), size=10, grp="atlas", priority=1),
            queued("/a2", "A", 50, T0 + timedelta(seconds=1), size=20, grp="cms", priority=7),
            queued("/a3", "A", 70, T0 + timedelta(seconds=2), size=30, grp="atlas", service_class="raw"),
        ],
        T0,
    )
    with session_factory() as session:
        demand = q.read_demand(session, T0 + timedelta(seconds=60))
    (tape,) = demand.tapes
    atlas, cms = tape.groups
    # two classes of service fold into one group entry
    assert (atlas.group, atlas.files, atlas.bytes) == ("atlas", 2, 40)
    assert (atlas.oldest, atlas.max_priority) == (T0 + timedelta(seconds=2), 1)
    assert (cms.oldest, cms.max_priority) == (T0 + timedelta(seconds=1), 7)


def test_tapes_in_flight_are_listed_even_with_nothing_left_queued(session_factory):
    add_request(
        session_factory,
        [
            queued("/a1", "A", 1, T0, size=10, grp="atlas", state=FileState.SUBMITTED),
            queued("/a2", "A", 2, T0, size=20, grp="cms", state=FileState.CLAIMED),
            queued("/a3", "A", 3, T0, size=30, grp="cms", state=FileState.SUBMITTED),
            queued("/b1", "B", 1, T0, size=5, grp="atlas"),
            queued("/c1", "C", 1, T0, size=5, state=FileState.STAGED),
        ],
        T0,
    )
    with session_factory() as session:
        demand = q.read_demand(session, T0)
    assert [t.tape for t in demand.tapes] == ["B"]
    (busy,) = demand.in_flight_tapes
    assert (busy.tape, busy.files) == ("A", 3)
    assert [(g.group, g.files, g.bytes) for g in busy.groups] == [("atlas", 1, 10), ("cms", 2, 50)]
    assert demand.in_flight == 3


def test_a_claim_narrowed_to_a_group_takes_only_its_files(session_factory):
    add_request(
        session_factory,
        [queued(f"/a{p}", "A", p, T0, grp="atlas" if p % 2 else "cms") for p in range(1, 7)],
        T0,
    )
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=10, group="cms"), "k", T0)
    assert [f.path for f in claimed] == ["/a2", "/a4", "/a6"]
    with session_factory() as session:
        rest = q.read_demand(session, T0)
    assert [(g.group, g.files) for g in rest.tapes[0].groups] == [("atlas", 3)]


def test_files_whose_read_failed_are_counted_and_can_be_left_for_a_later_mount(session_factory):
    failed_before = queued("/a2", "A", 2, T0)
    failed_before.attempts = 1
    add_request(session_factory, [queued("/a1", "A", 1, T0), failed_before, queued("/a3", "A", 3, T0)], T0)
    with session_factory() as session:
        (tape,) = q.read_demand(session, T0).tapes
    assert (tape.files, tape.retries) == (3, 1)
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=10, first_attempts_only=True), "k", T0)
    assert [f.path for f in claimed] == ["/a1", "/a3"]
