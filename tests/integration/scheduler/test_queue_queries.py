"""The scheduler's SQL on PostgreSQL and SQLite."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from carousel.db import queue_queries as q
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.models import QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.planning import ReadOrder, Selection
from carousel.domain.states import FileState, LinkState
from tests.integration.conftest import EPOCH_FOR_ROWS as T0
from tests.integration.scheduler.rows import add_request, queued


def states(factory: sessionmaker[Session]) -> dict[str, str]:
    with factory() as session:
        return dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.state)).all())


def test_demand_is_one_entry_per_tape(session_factory):
    add_request(
        session_factory,
        [
            queued("/a1", "A", 100, T0 + timedelta(seconds=5), size=10, grp="atlas", priority=1),
            queued("/a2", "A", 50, T0 + timedelta(seconds=1), size=20, grp="cms", priority=7),
            queued("/a3", "A", 70, T0 + timedelta(seconds=2), size=30, grp="atlas"),
            queued("/b1", "B", 10, T0, size=5),
            queued("/b2", "B", 20, T0, size=5, state=FileState.SUBMITTED),
            queued("/c1", "C", 10, T0, size=5, not_before_s=3600),  # backing off: not yet due
            queued("/d1", "D", 10, T0, size=5, state=FileState.CLAIMED),
        ],
        T0,
    )
    with session_factory() as session:
        demand = q.read_demand(session, T0 + timedelta(seconds=60))
    by_tape = {t.tape: t for t in demand.tapes}
    assert set(by_tape) == {"A", "B"}
    a = by_tape["A"]
    assert (a.files, a.bytes, a.max_priority, a.oldest) == (3, 60, 7, T0 + timedelta(seconds=1))
    assert [(g.group, g.files, g.bytes) for g in a.groups] == [("atlas", 2, 40), ("cms", 1, 20)]
    assert by_tape["B"].in_flight == 1
    assert demand.in_flight == 2
    assert [t.tape for t in demand.tapes] == ["B", "A"]  # oldest first


def test_backed_off_file_becomes_due(session_factory):
    add_request(session_factory, [queued("/c1", "C", 10, T0, not_before_s=600)], T0)
    with session_factory() as session:
        assert q.read_demand(session, T0 + timedelta(seconds=599)).tapes == ()
        assert q.read_demand(session, T0 + timedelta(seconds=600)).tapes[0].tape == "C"


def test_claim_one_tape_in_head_order(session_factory):
    add_request(
        session_factory,
        [queued(f"/a{p}", "A", p, T0 + timedelta(seconds=-p)) for p in (500, 100, 300, 200, 400)]
        + [queued("/b1", "B", 1, T0)],
        T0,
    )
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=3), "k1", T0)
    assert [f.path for f in claimed] == ["/a100", "/a200", "/a300"]
    s = states(session_factory)
    assert [p for p, st in sorted(s.items()) if st == "CLAIMED"] == ["/a100", "/a200", "/a300"]
    with session_factory() as session:
        keys = set(session.scalars(select(QueuedFileRow.batch_key).where(QueuedFileRow.state == "CLAIMED")))
    assert keys == {"k1"}


def test_claim_any_tape_in_arrival_order_within_a_class(session_factory):
    add_request(
        session_factory,
        [
            queued("/late", "A", 1, T0 + timedelta(seconds=30)),
            queued("/early", "B", 1, T0 + timedelta(seconds=10)),
            queued("/middle", "C", 1, T0 + timedelta(seconds=20)),
            queued("/other-class", "D", 1, T0, service_class="fast"),
        ],
        T0,
    )
    selection = Selection(tape=None, max_files=2, order=ReadOrder.ARRIVAL, service_class="default")
    with transaction(session_factory) as session:
        claimed = q.claim(session, selection, "k", T0 + timedelta(seconds=60))
    assert [f.path for f in claimed] == ["/early", "/middle"]


def test_byte_budget_cuts_the_claim_but_never_to_nothing(session_factory):
    add_request(session_factory, [queued(f"/a{p}", "A", p, T0, size=100) for p in range(1, 6)], T0)
    with transaction(session_factory) as session:
        assert len(q.claim(session, Selection(tape="A", max_files=10, max_bytes=250), "k", T0)) == 2
        assert len(q.claim(session, Selection(tape="A", max_files=10, max_bytes=1), "k2", T0)) == 1


def test_hand_over_records_recalls_and_starts_requests(session_factory):
    request_id = add_request(session_factory, [queued("/a1", "A", 1, T0), queued("/a2", "A", 2, T0)], T0)
    later = T0 + timedelta(seconds=5)
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=5), "claim", later)
        q.mark_requests_started(session, [f.id for f in claimed], later)
    with transaction(session_factory) as session:
        marked = q.record_handed_over(
            session, [q.HandedOver("batch-1", "A", tuple(f.id for f in claimed))], later
        )
    assert marked == 2
    with session_factory() as session:
        rows = session.execute(select(QueuedFileRow.state, QueuedFileRow.batch_key)).all()
        assert set(rows) == {("SUBMITTED", "batch-1")}
        recalls = session.execute(select(Recall.batch_key, Recall.tape, Recall.submitted_at)).all()
        assert sorted(recalls) == [("batch-1", "A", later)] * 2
        assert session.get(StageRequest, request_id).started_at == later  # type: ignore[union-attr]


def test_refused_batch_goes_back_as_it_was(session_factory):
    add_request(session_factory, [queued("/a1", "A", 1, T0)], T0)
    with transaction(session_factory) as session:
        claimed = q.claim(session, Selection(tape="A", max_files=5), "claim", T0)
        assert q.return_to_queue(session, [f.id for f in claimed]) == 1
    with session_factory() as session:
        row = session.scalars(select(QueuedFileRow)).one()
        assert (row.state, row.batch_key, row.claimed_at) == ("QUEUED", None, None)


def test_only_stale_claims_are_recovered(session_factory):
    add_request(session_factory, [queued("/old", "A", 1, T0), queued("/new", "B", 1, T0)], T0)
    with transaction(session_factory) as session:
        q.claim(session, Selection(tape="A", max_files=1), "crashed", T0)
        q.claim(session, Selection(tape="B", max_files=1), "running", T0 + timedelta(seconds=400))
    with transaction(session_factory) as session:
        assert q.recover_stale_claims(session, T0 + timedelta(seconds=300)) == 1
    assert states(session_factory) == {"/old": "QUEUED", "/new": "CLAIMED"}


def test_unwanted_in_flight_and_settling_cancels(session_factory):
    wanted_by = add_request(
        session_factory,
        [
            queued("/kept", "A", 1, T0, state=FileState.SUBMITTED),
            queued("/dropped", "A", 2, T0, state=FileState.SUBMITTED),
            queued("/queued", "A", 3, T0),
        ],
        T0,
    )
    with transaction(session_factory) as session:
        ids = dict(session.execute(select(QueuedFileRow.path, QueuedFileRow.id)).all())
        session.execute(
            RequestFile.__table__.update()
            .where(RequestFile.request_id == wanted_by, RequestFile.file_id != ids["/kept"])
            .values(state=LinkState.CANCELLED.value)
        )
    with session_factory() as session:
        assert q.unwanted_in_flight(session, 100) == [ids["/dropped"]]
    # a new requester asks for /dropped before the cancel is settled: it is queued again, not cancelled
    add_request(session_factory, [ids["/dropped"]], T0)
    with transaction(session_factory) as session:
        assert q.settle_cancelled(session, [ids["/dropped"], ids["/kept"]], T0) == (0, 2)
    assert states(session_factory)["/dropped"] == "QUEUED"


def test_settled_cancel_without_askers(session_factory):
    request_id = add_request(session_factory, [queued("/gone", "A", 1, T0, state=FileState.SUBMITTED)], T0)
    with transaction(session_factory) as session:
        session.execute(
            RequestFile.__table__.update()
            .where(RequestFile.request_id == request_id)
            .values(state=LinkState.CANCELLED.value)
        )
        file_id = session.scalars(select(QueuedFileRow.id)).one()
        assert q.settle_cancelled(session, [file_id], T0) == (1, 0)
    assert states(session_factory) == {"/gone": "CANCELLED"}


def test_unresolved_rotate_and_resolve(session_factory):
    add_request(
        session_factory,
        [
            queued("/u1", "?", 0, T0, state=FileState.UNRESOLVED),
            queued("/u2", "?", 0, T0 + timedelta(seconds=1), state=FileState.UNRESOLVED),
        ],
        T0,
    )
    with transaction(session_factory) as session:
        first = q.unresolved_due(session, 1)
        assert [u.path for u in first] == ["/u1"]
        q.still_unresolved(session, first[0].id, "library busy", T0)
        second = q.unresolved_due(session, 1)
        assert [u.path for u in second] == ["/u2"]  # the one asked about least recently
        assert q.resolve_to_tape(session, second[0].id, tape="T7", position_bytes=9, size_bytes=99)
    with session_factory() as session:
        rows = {r.path: r for r in session.scalars(select(QueuedFileRow))}
    assert (rows["/u2"].state, rows["/u2"].tape, rows["/u2"].size_bytes) == ("QUEUED", "T7", 99)
    assert (rows["/u1"].state, rows["/u1"].error) == ("UNRESOLVED", "library busy")


def test_claims_skip_rows_another_transaction_holds(fresh_database_url: URL):
    """FOR UPDATE SKIP LOCKED on PostgreSQL; on SQLite the second writer simply waits its turn."""
    engine = make_engine(fresh_database_url)
    factory = make_session_factory(engine)
    try:
        add_request(factory, [queued(f"/a{p}", "A", p, T0) for p in range(1, 7)], T0)
        if engine.dialect.name != "postgresql":
            with transaction(factory) as session:
                assert len(q.claim(session, Selection(tape="A", max_files=4), "one", T0)) == 4
            with transaction(factory) as session:
                assert len(q.claim(session, Selection(tape="A", max_files=4), "two", T0)) == 2
            return
        with transaction(factory) as first, transaction(factory) as second:
            held = q.claim(first, Selection(tape="A", max_files=4), "one", T0)
            other = q.claim(second, Selection(tape="A", max_files=4), "two", T0)
        assert [f.path for f in held] == ["/a1", "/a2", "/a3", "/a4"]
        assert [f.path for f in other] == ["/a5", "/a6"]
    finally:
        engine.dispose()
