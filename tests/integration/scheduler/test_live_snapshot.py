"""The live snapshot (carousel.scheduler.live_snapshot): the queue read over the database store with the
settings' fair-share window, beside the library's health, capacity and published costs; a library that does
not answer plans as offline, in the cycle (which reports the failure) as in the outlook and the dry run
(tests/integration/api/test_library_not_answering.py)."""

from __future__ import annotations

import pytest

from carousel.config import Settings
from carousel.domain.clock import ManualClock
from carousel.domain.states import FileState
from carousel.scheduler.live_snapshot import library_state, live_queue_store, live_snapshot
from hsm_adapters.base import Health
from hsm_adapters.simulated.adapter import build_simulated_adapter
from tests.integration.scheduler.rows import add_request
from tests.integration.scheduler.support import (
    SMALL_LIBRARY,
    all_in,
    catalogue_files,
    file_states,
    make_cycle,
)
from tests.integration.scheduler.test_group_usage import at, history
from tests.integration.unanswering_library import NO_ANSWER, UnansweringLibrary


def test_the_snapshot_reads_the_queue_beside_the_library_and_its_costs(
    session_factory, make_adapter, clock: ManualClock
):
    adapter = make_adapter(drives=3)
    files = catalogue_files(adapter, 12, clock.now(), tapes=3)
    add_request(session_factory, files, clock.now())
    store = live_queue_store(Settings(), session_factory)

    snapshot = live_snapshot(store, adapter, clock)

    assert snapshot.now == clock.now()
    assert {t.tape for t in snapshot.tapes} == {f.tape for f in files}
    assert sum(t.files for t in snapshot.tapes) == 12
    library = snapshot.library
    assert library.online and library.drives_total == 3 == library.drives_free
    assert library.costs == adapter.library_costs()  # the adapter's published figures


@pytest.mark.parametrize(
    "window_s, groups", [(86_400.0, ["atlas", "cms"]), (100_000.0, ["atlas", "cms", "star"])]
)
def test_the_fair_share_window_is_the_settings(session_factory, window_s, groups):
    history(session_factory)  # star's only mount ended about 91,000 s before now
    clock = ManualClock(at(2000))
    adapter = build_simulated_adapter(SMALL_LIBRARY, clock)
    try:
        store = live_queue_store(Settings(fair_share_window_s=window_s), session_factory)
        snapshot = live_snapshot(store, adapter, clock)
    finally:
        adapter.close()
    assert [u.group for u in snapshot.usage] == groups


@pytest.mark.parametrize("silent", [("health",), ("capacity",)])
def test_a_library_that_does_not_answer_is_offline_with_no_drives_and_the_failure_kept(make_adapter, silent):
    library = UnansweringLibrary(make_adapter(drives=3), silent=silent)

    state = library_state(library)

    assert library.asked == list(silent)
    assert state.health is Health.OFFLINE and not state.online
    assert (state.capacity.drives_total, state.capacity.drives_free) == (0, 0)
    assert isinstance(state.failure, ConnectionError) and str(state.failure) == NO_ANSWER
    assert library_state(library.inner).failure is None  # the library itself answers


@pytest.fixture
def queued_behind_silence(
    session_factory, make_adapter, clock: ManualClock
) -> tuple[UnansweringLibrary, set[str]]:
    """A library whose health raises, and six files of two of its tapes queued; returns the tapes."""
    library = UnansweringLibrary(make_adapter(drives=3))
    files = catalogue_files(library.inner, 6, clock.now(), tapes=2)
    add_request(session_factory, files, clock.now())
    return library, {f.tape for f in files}


def test_a_library_whose_health_raises_is_planned_as_offline(
    session_factory, queued_behind_silence, clock: ManualClock
):
    library, _ = queued_behind_silence

    snapshot = live_snapshot(live_queue_store(Settings(), session_factory), library, clock)

    assert library.asked == ["health"]
    assert not snapshot.library.online
    assert (snapshot.library.drives_total, snapshot.library.drives_free) == (0, 0)
    assert sum(t.files for t in snapshot.tapes) == 6  # the queue is read all the same


def test_the_cycle_plans_as_offline_reports_the_failure_and_submits_nothing(
    session_factory, queued_behind_silence, clock: ManualClock
):
    library, tapes = queued_behind_silence
    cycle = make_cycle(session_factory, library, clock)

    report = cycle.run_once()

    assert report.leader and report.health is Health.OFFLINE
    assert report.errors == [f"health/capacity: {NO_ANSWER}"]
    assert report.budget == 0 and report.claimed == report.files_submitted == 0
    assert report.tapes_with_work == 2
    assert report.plan is not None and report.plan.selections == ()
    assert set(report.plan.waiting) == tapes
    assert set(report.plan.waiting.values()) == {"the library is offline"}
    assert all_in(session_factory, FileState.QUEUED)()
    assert len(file_states(session_factory)) == 6
    clock.advance(3600)
    library.inner.advance()
    assert library.inner.library.stats().mounts == 0  # nothing reached the library
