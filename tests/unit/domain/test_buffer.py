"""The disk buffer's arithmetic: what may be handed over now, what to evict first, and the plan's cut."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from carousel.domain.buffer import (
    BUFFER_FULL,
    BufferLimits,
    BufferUsage,
    admissible_bytes,
    admit,
    admit_plan,
    after_claims,
    eviction_needed,
    fitting,
    free_bytes,
    least_recently_used,
    view,
)
from carousel.domain.planning import LibraryView, Plan, Selection, Snapshot, TapeDemand

NOW = datetime(2026, 3, 1, tzinfo=UTC)
LIMITS = BufferLimits(capacity_bytes=1000, high_watermark=0.9, low_watermark=0.5)  # high 900, low 500


def test_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="capacity_bytes"):
        BufferLimits(0)
    with pytest.raises(ValueError, match="watermarks"):
        BufferLimits(1000, high_watermark=0.5, low_watermark=0.8)


def test_free_space_counts_reserved_bytes_and_admission_counts_what_eviction_frees() -> None:
    usage = BufferUsage(on_disk_bytes=600, pinned_bytes=200, reserved_bytes=100)
    assert free_bytes(LIMITS, usage) == 900 - 600 - 100
    assert admissible_bytes(LIMITS, usage) == 900 - 200 - 100  # the 400 unpinned bytes can go
    assert view(LIMITS, usage).admissible_bytes == 600


def test_admission_takes_the_longest_prefix_that_fits_and_evicts_down_to_the_low_watermark() -> None:
    usage = BufferUsage(on_disk_bytes=600, pinned_bytes=200, reserved_bytes=100)
    admission = admit(LIMITS, usage, [150, 150, 350, 10])
    assert (admission.admitted, admission.admitted_bytes) == (2, 300)  # 350 more would pass 600
    # 600 + 100 + 300 = 1000 > 900: free down to 500, i.e. 500 bytes, at most the 400 evictable
    assert admission.evict_bytes == 400


def test_no_eviction_while_below_the_high_watermark() -> None:
    usage = BufferUsage(on_disk_bytes=300, pinned_bytes=0, reserved_bytes=0)
    assert eviction_needed(LIMITS, usage, 600) == 0
    assert eviction_needed(LIMITS, usage, 601) == 300  # all there is to evict (401 would reach the low mark)
    fuller = BufferUsage(on_disk_bytes=800, pinned_bytes=0, reserved_bytes=0)
    assert eviction_needed(LIMITS, fuller, 200) == 800 + 200 - 500  # down to the low watermark, no further


def test_a_full_pinned_buffer_admits_nothing() -> None:
    usage = BufferUsage(on_disk_bytes=900, pinned_bytes=900, reserved_bytes=0)
    assert admit(LIMITS, usage, [1]).admitted == 0


def test_a_file_larger_than_the_buffer_can_never_fit() -> None:
    assert LIMITS.fits_ever(900)
    assert LIMITS.too_big_reason(900) is None
    reason = LIMITS.too_big_reason(901)
    assert reason is not None and "larger than the disk buffer" in reason


def test_least_recently_used_first_until_enough_is_freed() -> None:
    assert least_recently_used([("a", 100), ("b", 100), ("c", 100)], 150) == ["a", "b"]
    assert least_recently_used([("a", 100)], 0) == []
    assert least_recently_used([("a", 100)], 500) == ["a"]  # all there is


def test_the_claims_cut_is_hard() -> None:
    assert fitting([(1, 100), (2, 200), (3, 1)], 250) == 1  # a prefix, even if a later one would fit
    assert fitting([(1, 100)], 99) == 0  # not even the first file


def _snapshot(admissible: int) -> Snapshot:
    usage = BufferUsage(on_disk_bytes=900 - admissible, pinned_bytes=900 - admissible, reserved_bytes=0)
    tapes = (
        TapeDemand("T1", files=4, bytes=400, oldest=NOW, max_priority=0, service_class="default"),
        TapeDemand("T2", files=2, bytes=200, oldest=NOW, max_priority=0, service_class="default"),
    )
    return Snapshot(NOW, tapes, LibraryView(True, 2, 2), buffer=view(LIMITS, usage))


def test_the_plan_keeps_what_fits_and_the_rest_waits_for_space() -> None:
    plan = Plan(selections=(Selection("T1", 4), Selection("T2", 2)))
    cut = admit_plan(plan, _snapshot(admissible=450))
    assert [s.tape for s in cut.selections] == ["T1"]
    assert cut.waiting == {"T2": BUFFER_FULL}


def test_a_plan_without_a_buffer_or_with_room_is_left_alone() -> None:
    plan = Plan(selections=(Selection("T1", 4), Selection("T2", 2)))
    assert admit_plan(plan, _snapshot(admissible=900)) is plan
    unbuffered = Snapshot(NOW, (), LibraryView(True, 2, 2))
    assert admit_plan(plan, unbuffered) is plan


def test_a_full_buffer_holds_every_tape_back() -> None:
    plan = Plan(selections=(Selection("T1", 4), Selection("T2", 2)))
    cut = admit_plan(plan, _snapshot(admissible=0))
    assert cut.selections == ()
    assert cut.waiting == {"T1": BUFFER_FULL, "T2": BUFFER_FULL}


def test_a_selection_of_any_tape_held_back_holds_back_every_tape() -> None:
    plan = Plan(selections=(Selection(None, 6),))
    cut = admit_plan(plan, _snapshot(admissible=0))
    assert cut.selections == ()
    assert cut.waiting == {"T1": BUFFER_FULL, "T2": BUFFER_FULL}


def test_bytes_claimed_by_a_library_before_leave_the_next_less_room() -> None:
    before = view(LIMITS, BufferUsage(on_disk_bytes=600, pinned_bytes=200, reserved_bytes=100))
    after = after_claims(before, 250)
    assert (after.reserved_bytes, after.free_bytes, after.admissible_bytes) == (350, 0, 350)
    assert after == view(LIMITS, BufferUsage(on_disk_bytes=600, pinned_bytes=200, reserved_bytes=350))
    assert after_claims(before, 0) is before
    assert after_claims(before, 10_000).admissible_bytes == 0
