from datetime import UTC, datetime, timedelta

import pytest

from carousel.domain.planning import LibraryView, ReadOrder, Snapshot, TapeDemand
from policies.fifo import FifoOptions, FifoPolicy, build_fifo

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def tape(name: str, files: int, age_s: int, service_class: str = "default") -> TapeDemand:
    return TapeDemand(
        tape=name,
        files=files,
        bytes=files * 10,
        oldest=T0 - timedelta(seconds=age_s),
        max_priority=0,
        service_class=service_class,
    )


def snapshot(*tapes: TapeDemand, online: bool = True, slots: dict[str, int] | None = None) -> Snapshot:
    library = LibraryView(online=online, drives_total=4, drives_free=4, queue_slots=slots or {})
    return Snapshot(now=T0, tapes=tapes, library=library)


def test_one_arrival_ordered_selection_of_single_file_batches_bounded_by_slots():
    plan = FifoPolicy().plan(snapshot(tape("A", 50, 10), tape("B", 5, 99), slots={"default": 7}))
    assert len(plan.selections) == 1
    selection = plan.selections[0]
    assert selection.tape is None
    assert selection.order is ReadOrder.ARRIVAL
    assert selection.one_file_per_batch
    assert selection.max_files == 7
    assert selection.service_class == "default"


def test_max_files_bounds_a_library_without_slot_reports():
    plan = FifoPolicy(FifoOptions(max_files=3)).plan(snapshot(tape("A", 50, 10)))
    assert [s.max_files for s in plan.selections] == [3]


def test_budget_is_shared_across_classes_oldest_class_first():
    snap = snapshot(
        tape("A", 50, 10, "fast"),
        tape("B", 50, 500, "slow"),
        slots={"fast": 8, "slow": 8},
    )
    plan = FifoPolicy(FifoOptions(max_files=10)).plan(snap)
    assert [(s.service_class, s.max_files) for s in plan.selections] == [("slow", 8), ("fast", 2)]


def test_full_queue_and_missing_class_leave_tapes_waiting_with_a_reason():
    snap = snapshot(tape("A", 5, 10, "default"), tape("B", 5, 10, "other"), slots={"default": 0})
    plan = FifoPolicy().plan(snap)
    assert plan.selections == ()
    assert "full" in plan.waiting["A"]
    assert "no queue" in plan.waiting["B"]


def test_offline_library_gets_nothing():
    plan = FifoPolicy().plan(snapshot(tape("A", 5, 10), online=False, slots={"default": 10}))
    assert plan.selections == ()
    assert plan.waiting == {"A": "the library is offline"}


def test_same_snapshot_same_plan():
    snap = snapshot(tape("A", 5, 10), tape("B", 3, 20), slots={"default": 4})
    policy = FifoPolicy()
    assert policy.plan(snap) == policy.plan(snap)


def test_options_are_validated():
    assert build_fifo({"max_files": 5}).options.max_files == 5
    with pytest.raises(ValueError, match="max_files"):
        build_fifo({"max_files": 0})
    with pytest.raises(ValueError, match="speed"):
        build_fifo({"speed": 1})
