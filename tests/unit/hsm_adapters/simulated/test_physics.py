"""The physics model: calibration against each profile, geometry, orderings and the efficiency formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hsm_adapters.simulated.physics import (
    TapePhysics,
    TapePosition,
    analytic_efficiency,
    mount_costs,
    shortest_locate_first,
)
from hsm_adapters.simulated.profiles import builtin_profiles, load_profile

PROFILES = builtin_profiles()
PHYSICS = {name: TapePhysics(load_profile(name)) for name in PROFILES}
LTO9 = PHYSICS["lto9"]
SAMPLES = 200_000


def uniform_offsets(
    physics: TapePhysics, rng: np.random.Generator, shape: int | tuple[int, ...]
) -> np.ndarray:
    return rng.integers(0, physics.profile.capacity_bytes, size=shape)


# --- calibration against the profile ----------------------------------------------------------------------


@pytest.mark.parametrize("name", PROFILES)
def test_mean_locate_from_the_load_point_matches_the_profile(name: str):
    physics = PHYSICS[name]
    targets = uniform_offsets(physics, np.random.default_rng(1), SAMPLES)
    mean = physics.locate_many(0, targets).mean()
    assert mean == pytest.approx(physics.profile.locate_avg_s, rel=0.01)


@pytest.mark.parametrize("name", [name for name in PROFILES if not load_profile(name).rewind_at_unload])
def test_mean_rewind_over_uniform_heads_matches_the_profile(name: str):
    physics = PHYSICS[name]
    heads = uniform_offsets(physics, np.random.default_rng(2), SAMPLES)
    assert physics.rewind_many(heads, 0).mean() == pytest.approx(physics.profile.rewind_avg_s, rel=0.01)
    assert physics.rewind_s(physics.profile.capacity_bytes // physics.profile.wraps, 0) == pytest.approx(
        physics.profile.rewind_max_s + physics.profile.rewind_avg_s - physics.profile.rewind_max_s / 2
    )


@pytest.mark.parametrize("name", PROFILES)
def test_expected_single_recall_is_the_sum_of_the_profile_figures(name: str):
    physics = PHYSICS[name]
    p = physics.profile
    size = 284_000_000
    rewind = p.rewind_at_unload[0][1] if p.rewind_at_unload else p.rewind_avg_s
    by_hand = 2 * p.robot_exchange_s + p.load_s + p.locate_avg_s + p.per_file_overhead_s
    by_hand += size / p.rate_bytes_per_s + rewind + p.unload_s
    assert physics.expected_single_recall_s(size) == pytest.approx(by_hand, rel=0.01)


@pytest.mark.parametrize("name", PROFILES)
def test_single_recalls_played_operation_by_operation_average_to_the_expected_figure(name: str):
    # mount, locate from the load point, overhead, read, then unmount from where the file ends
    physics = PHYSICS[name]
    size = 84_000_000
    rng = np.random.default_rng(3)
    starts = rng.integers(0, physics.profile.capacity_bytes - size, size=SAMPLES)
    total = (
        physics.mount_s()
        + physics.locate_many(0, starts)
        + physics.overhead_s()
        + physics.read_s(size)
        + physics.rewind_many(starts + size, size)
        + physics.profile.unload_s
        + physics.profile.robot_exchange_s
    )
    assert total.mean() == pytest.approx(physics.expected_single_recall_s(size), rel=0.01)
    # the scalar path agrees with the vectorised one on a few of them
    for start in starts[:50].tolist():
        one = physics.mount_s() + physics.locate_s(0, start) + physics.overhead_s() + physics.read_s(size)
        one += physics.unmount_s(start + size, size)
        expected = physics.mount_s() + physics.locate_many(0, start) + physics.overhead_s()
        expected += physics.read_s(size) + physics.rewind_many(start + size, size) + physics.profile.unload_s
        assert one == pytest.approx(float(expected) + physics.profile.robot_exchange_s)


def test_lto9_rewinds_by_the_class_of_bytes_moved_not_by_position():
    half_wrap = LTO9.profile.capacity_bytes // LTO9.profile.wraps // 2
    assert LTO9.rewind_s(half_wrap, 4_999_999_999) == 55.0
    assert LTO9.rewind_s(0, 5_000_000_000) == 110.0
    assert LTO9.rewind_s(0, 49_999_999_999) == 110.0
    assert LTO9.rewind_s(0, 50_000_000_000) == 165.0
    assert LTO9.rewind_s(0, 10**15) == 165.0  # beyond the last bound: the last class
    assert LTO9.unmount_s(0, 10**10) == 110.0 + LTO9.profile.unload_s + LTO9.profile.robot_exchange_s


def test_the_first_load_penalty_applies_only_when_asked():
    p = LTO9.profile
    assert LTO9.mount_s() == p.robot_exchange_s + p.load_s
    assert LTO9.mount_s(first_load=True) == p.robot_exchange_s + p.load_s + p.first_load_penalty_s


# --- geometry ---------------------------------------------------------------------------------------------


def test_bytes_fill_wrap_zero_forward_then_wrap_one_backward():
    per_wrap = LTO9.profile.capacity_bytes // LTO9.profile.wraps
    assert LTO9.position(0) == TapePosition(wrap=0, lpos=0.0)
    assert LTO9.position(per_wrap // 4).lpos == pytest.approx(0.25)
    quarter_into_wrap_one = LTO9.position(per_wrap + per_wrap // 4)
    assert quarter_into_wrap_one.wrap == 1
    assert quarter_into_wrap_one.lpos == pytest.approx(0.75)
    assert quarter_into_wrap_one.direction == -1
    last = LTO9.position(LTO9.profile.capacity_bytes)
    assert last.wrap == LTO9.profile.wraps - 1
    with pytest.raises(ValueError, match="outside the tape"):
        LTO9.position(-1)


def test_locating_further_ahead_on_the_same_wrap_costs_more():
    per_wrap = LTO9.profile.capacity_bytes // LTO9.profile.wraps
    near, far = LTO9.locate_s(0, per_wrap // 10), LTO9.locate_s(0, per_wrap // 2)
    assert 0 < near < far
    # going back on the same wrap costs more than going forward as far
    assert LTO9.locate_s(per_wrap // 2, 0 + 1) > LTO9.locate_s(1, per_wrap // 2)


offsets = st.integers(min_value=0, max_value=LTO9.profile.capacity_bytes)


@given(offsets, offsets)
def test_locate_is_never_negative_and_free_only_where_the_head_is(head: int, target: int):
    seconds = LTO9.locate_s(head, target)
    assert seconds >= 0
    assert (seconds == 0) == (head == target)


@given(offsets, offsets, offsets)
def test_no_detour_makes_a_locate_shorter(a: int, b: int, c: int):
    assert LTO9.locate_s(a, c) <= LTO9.locate_s(a, b) + LTO9.locate_s(b, c) + 1e-9


@given(
    st.sampled_from(PROFILES), st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=20)
)
def test_the_vectorised_locate_is_the_scalar_locate(name: str, pairs: list[tuple[float, float]]):
    physics = PHYSICS[name]
    capacity = physics.profile.capacity_bytes
    heads = [int(h * capacity) for h, _ in pairs]
    targets = [int(t * capacity) for _, t in pairs]
    vectorised = physics.locate_many(heads, targets)
    assert vectorised.tolist() == pytest.approx(
        [physics.locate_s(h, t) for h, t in zip(heads, targets, strict=True)]
    )


@given(st.sampled_from(PROFILES), st.integers(min_value=0, max_value=10**13))
def test_nothing_reads_faster_than_the_native_rate(name: str, size: int):
    physics = PHYSICS[name]
    assert physics.read_s(size) >= size / physics.profile.rate_bytes_per_s
    assert physics.read_s(size) == pytest.approx(size / physics.profile.rate_bytes_per_s)


# --- orderings --------------------------------------------------------------------------------------------


def mean_locate_per_mount(physics: TapePhysics, starts: np.ndarray) -> float:
    """starts: (mounts, n) byte offsets, read row by row left to right from the load point."""
    heads = np.concatenate([np.zeros((starts.shape[0], 1)), starts[:, :-1]], axis=1)
    return float(physics.locate_many(heads, starts).sum(axis=1).mean())


def position_over_random(physics: TapePhysics, files: int, seed: int = 4) -> float:
    rng = np.random.default_rng(seed)
    mounts = max(50, 20_000 // files)
    starts = np.sort(uniform_offsets(physics, rng, (mounts, files)), axis=1)
    shuffled = rng.permuted(starts, axis=1)
    return mean_locate_per_mount(physics, starts) / mean_locate_per_mount(physics, shuffled)


@pytest.mark.parametrize("name", PROFILES)
def test_position_order_beats_random_order_more_as_files_per_mount_grow(name: str):
    physics = PHYSICS[name]
    counts = (10, 100, max(200, 4 * physics.profile.wraps + 10))
    ratios = [position_over_random(physics, files) for files in counts]
    assert ratios[0] < 1
    assert ratios[0] > ratios[1] > ratios[2]
    # once a mount reads a few files per wrap, successive files share wraps and the gain is large
    assert ratios[2] < 0.65


def test_position_order_on_a_single_wrap_drive_is_a_large_gain_already():
    assert position_over_random(PHYSICS["t9940b"], 10) < 0.4


@pytest.mark.parametrize(("files", "low", "high"), [(2, 0.80, 0.92), (10, 0.40, 0.60)])
def test_shortest_locate_first_beats_file_order_by_the_published_margins(files: int, low: float, high: float):
    # published (CTA, LTO-7 fit): about 15 % at 2 files, about half at 10 and more
    physics = PHYSICS["lto7"]
    rng = np.random.default_rng(5)
    starts = np.sort(uniform_offsets(physics, rng, (400, files)), axis=1)
    ordered = np.stack([row[shortest_locate_first(physics, 0, row.tolist())] for row in starts])
    ratio = mean_locate_per_mount(physics, ordered) / mean_locate_per_mount(physics, starts)
    assert low <= ratio <= high


def test_shortest_locate_first_is_a_greedy_permutation_that_follows_the_head():
    per_wrap = LTO9.profile.capacity_bytes // LTO9.profile.wraps
    positions = [3 * per_wrap, per_wrap // 2, per_wrap // 4, 10 * per_wrap + 7]
    order = shortest_locate_first(LTO9, 0, positions)
    assert sorted(order) == list(range(len(positions)))
    # wrap 10 starts next to the load point: a wrap change is cheaper than a quarter of a wrap's length;
    # from there, back to wrap 0 and on along it, and the far end of wrap 2 (start of wrap 3) last
    assert order == [3, 2, 1, 0]
    head = 0
    for index in order:
        remaining = [i for i in range(len(positions)) if i not in order[: order.index(index)]]
        assert LTO9.locate_s(head, positions[index]) == min(
            LTO9.locate_s(head, positions[i]) for i in remaining
        )
        head = positions[index]
    # with sizes, the head continues from each file's end: a file starting there costs no locate at all
    sized = shortest_locate_first(LTO9, 0, [per_wrap // 2, 100], sizes=[10, per_wrap // 2 - 100])
    assert sized == [1, 0]
    with pytest.raises(ValueError, match="2 sizes for 3 positions"):
        shortest_locate_first(LTO9, 0, [1, 2, 3], sizes=[1, 2])


# --- the efficiency formula -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROFILES)
def test_efficiency_of_one_file_per_mount_is_read_time_over_a_single_recall(name: str):
    physics = PHYSICS[name]
    size = 284_000_000
    single = physics.read_s(size) / physics.expected_single_recall_s(size)
    assert analytic_efficiency(physics, size, 1) == pytest.approx(single, rel=0.01)
    assert mount_costs(physics, size, 1).file_s == pytest.approx(
        physics.profile.locate_avg_s + physics.profile.per_file_overhead_s, rel=0.01
    )


@pytest.mark.parametrize("name", PROFILES)
def test_efficiency_grows_with_file_size_and_with_files_per_mount(name: str):
    physics = PHYSICS[name]
    by_size = [analytic_efficiency(physics, size, 2) for size in (10**7, 10**8, 10**9, 10**10)]
    assert by_size == sorted(by_size)
    assert len(set(by_size)) == len(by_size)
    by_count = [analytic_efficiency(physics, 10**8, n) for n in (1, 1.2, 2, 10, 100)]
    assert by_count == sorted(by_count)
    assert len(set(by_count)) == len(by_count)


@pytest.mark.parametrize("name", PROFILES)
def test_efficiency_approaches_one_for_huge_files(name: str):
    physics = PHYSICS[name]
    huge = physics.profile.capacity_bytes // 4
    efficiency = analytic_efficiency(physics, huge, 2)
    fixed_costs = mount_costs(physics, huge, 2)
    assert 0.9 < efficiency < 1
    assert 1 - efficiency == pytest.approx(
        (fixed_costs.file_s + fixed_costs.mount_s / 2)
        / (physics.read_s(huge) + fixed_costs.file_s + fixed_costs.mount_s / 2)
    )


def test_efficiency_is_deterministic_and_interpolates_fractional_files_per_mount():
    fresh = TapePhysics(load_profile("t9940b"))
    assert analytic_efficiency(fresh, 84_000_000, 3) == analytic_efficiency(PHYSICS["t9940b"], 84_000_000, 3)
    low, high = mount_costs(fresh, 84_000_000, 1), mount_costs(fresh, 84_000_000, 2)
    between = mount_costs(fresh, 84_000_000, 1.5)
    assert min(low.mount_s, high.mount_s) <= between.mount_s <= max(low.mount_s, high.mount_s)
    assert high.file_s < between.file_s < low.file_s


@pytest.mark.parametrize(("name", "files"), [("lto7", 5), ("t9940b", 20), ("lto9", 300)])
def test_the_formula_matches_mounts_played_with_the_scalar_model(name: str, files: int):
    # An independent layout: n distinct file slots of a cartridge filled with files of one size.
    physics = PHYSICS[name]
    size = 2_000_000_000
    slots = physics.profile.capacity_bytes // size
    rng = np.random.default_rng(6)
    mounts = max(100, 6_000 // files)
    total = 0.0
    for _ in range(mounts):
        head = 0
        chosen = np.sort(rng.choice(slots, size=files, replace=False)) * size
        for start in chosen.tolist():
            total += physics.locate_s(head, start) + physics.overhead_s() + physics.read_s(size)
            head = start + size
        total += physics.mount_s() + physics.unmount_s(head, files * size)
    simulated = mounts * files * physics.read_s(size) / total
    assert simulated == pytest.approx(analytic_efficiency(physics, size, files), rel=0.02)


def test_the_formula_refuses_what_cannot_be_a_mount():
    with pytest.raises(ValueError, match="at least 1"):
        analytic_efficiency(LTO9, 10**9, 0.5)
    with pytest.raises(ValueError, match="do not fit"):
        analytic_efficiency(PHYSICS["t9940b"], 10**11, 3)
    assert math.isfinite(analytic_efficiency(PHYSICS["t9940b"], 10**11, 2))
