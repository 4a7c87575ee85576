"""Events applied as they arrive: the adapter's sink and the pump between cycles, on both databases, against
the simulated library stepped in virtual time."""

from __future__ import annotations

from carousel.db.models import AppliedEvent
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from hsm_adapters.base import Event
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import catalogue_files, count, file_states, make_cycle


def test_the_pump_applies_events_between_cycles(session_factory, make_adapter, clock: ManualClock):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 4, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    first = cycle.run_once()
    assert first.files_submitted == 4
    assert set(file_states(session_factory).values()) == {FileState.SUBMITTED.value}

    clock.advance(3_600)  # the library has read them all meanwhile
    cycle.live.pump()  # no cycle runs
    assert set(file_states(session_factory).values()) == {FileState.STAGED.value}
    assert count(session_factory, AppliedEvent) == adapter._seq

    after = cycle.run_once()  # the cycle reports what the pump applied since the last one
    assert after.events is not None and after.events.staged == 4
    assert cycle.run_once().events is None  # reported once


def test_only_the_leader_applies_and_what_waits_is_applied_at_its_next_cycle(
    session_factory, make_adapter, clock: ManualClock
):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 3, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    cycle.run_once()
    cycle.close()  # leads no more (a standby's place)

    clock.advance(3_600)
    cycle.live.pump()  # the events arrive, and wait
    assert set(file_states(session_factory).values()) == {FileState.SUBMITTED.value}
    assert count(session_factory, AppliedEvent) == 0

    report = cycle.run_once()  # leading again: its events step applies them
    assert report.events is not None and report.events.staged == 3
    assert set(file_states(session_factory).values()) == {FileState.STAGED.value}


def test_an_event_delivered_twice_is_applied_once(session_factory, make_adapter, clock: ManualClock):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 2, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    passed: list[Event] = []

    def copying(event: Event) -> None:
        passed.append(event)
        cycle.live.sink(event)

    adapter.set_sink(copying)
    cycle.run_once()
    clock.advance(3_600)
    cycle.live.pump()
    applied = count(session_factory, AppliedEvent)
    assert applied == adapter._seq == len(passed)
    cycle.live.sink(passed[-1])  # delivered again (a replayed log, a restarted reader)
    report = cycle.run_once()
    # the cycle reports the pump's applications since the last cycle, and the copy it found applied
    assert report.events is not None and (report.events.applied, report.events.duplicates) == (applied, 1)
    assert count(session_factory, AppliedEvent) == applied


def test_the_cycle_collects_what_the_sink_refused(session_factory, make_adapter, clock: ManualClock):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 2, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    cycle.run_once()
    refused: list[int] = []

    def refusing_once(event: Event) -> None:
        if not refused:
            refused.append(event.seq)
            raise RuntimeError("the sink is full")
        cycle.live.sink(event)

    adapter.set_sink(refusing_once)
    clock.advance(3_600)
    cycle.live.pump()  # the sink refused: the adapter keeps the events, nothing is applied
    assert refused and count(session_factory, AppliedEvent) == 0
    assert set(file_states(session_factory).values()) == {FileState.SUBMITTED.value}

    cycle.run_once()  # the cycle's poll brings them
    assert set(file_states(session_factory).values()) == {FileState.STAGED.value}
    assert count(session_factory, AppliedEvent) == adapter._seq


def test_the_cycle_does_not_wait_for_an_application_under_way(
    session_factory, make_adapter, clock: ManualClock
):
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 2, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    cycle.run_once()
    clock.advance(3_600)
    with cycle.live._apply_lock:  # the pump is applying a batch at this moment
        report = cycle.run_once()  # returns: does not wait for it
    assert report.leader and report.events is None
    assert set(file_states(session_factory).values()) == {FileState.SUBMITTED.value}
    cycle.live.pump()  # the application after it takes what came meanwhile
    assert set(file_states(session_factory).values()) == {FileState.STAGED.value}


def test_the_pump_leaves_events_alone_while_a_hand_over_is_under_way(
    session_factory, make_adapter, clock: ManualClock
):
    """Between a batch's submission and its record no event is applied (its files are not SUBMITTED yet,
    their recalls not written)."""
    adapter = make_adapter()
    add_request(session_factory, catalogue_files(adapter, 2, clock.now(), tapes=1), clock.now())
    cycle = make_cycle(session_factory, adapter, clock)
    cycle.run_once()
    clock.advance(3_600)
    with cycle.live.held():
        cycle.live.pump()
        assert set(file_states(session_factory).values()) == {FileState.SUBMITTED.value}
    cycle.live.pump()
    assert set(file_states(session_factory).values()) == {FileState.STAGED.value}
    assert count(session_factory, AppliedEvent) == adapter._seq
