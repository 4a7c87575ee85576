import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carousel.domain.planning import LibraryCosts

COSTS = LibraryCosts(
    mount_s=30.0,
    unmount_s=70.0,
    rate_bytes_per_s=100.0,
    overhead_s=2.0,
    locate_s=((1, 40.0), (10, 20.0), (100, 5.0)),
)


def test_locate_interpolates_on_log_files_and_holds_beyond_the_points():
    assert COSTS.locate_per_file_s(1) == 40.0
    assert COSTS.locate_per_file_s(10) == 20.0
    # halfway in log between 10 and 100
    assert math.isclose(
        COSTS.locate_per_file_s(int(10**1.5)), 20.0 - 15.0 * (math.log(31) - math.log(10)) / math.log(10)
    )
    assert COSTS.locate_per_file_s(5000) == 5.0


def test_mount_service_adds_mount_pass_and_unmount():
    assert COSTS.pass_s(0, 0) == 0.0
    assert COSTS.mount_service_s(10, 1000) == 30.0 + 10 * (20.0 + 2.0) + 10.0 + 70.0


@given(st.integers(min_value=1, max_value=10_000), st.integers(min_value=0, max_value=10**12))
def test_per_clock_divides_every_duration_by_the_scale(files, size):
    fast = COSTS.per_clock(100.0)
    assert math.isclose(fast.mount_service_s(files, size) * 100, COSTS.mount_service_s(files, size))
    assert math.isclose(fast.locate_per_file_s(files) * 100, COSTS.locate_per_file_s(files))


def test_per_clock_at_scale_one_is_the_same_costs_and_refuses_a_scale_below_zero():
    assert COSTS.per_clock(1.0) is COSTS
    with pytest.raises(ValueError, match="scale"):
        COSTS.per_clock(0.0)


@given(st.integers(min_value=1, max_value=10_000), st.integers(min_value=1, max_value=10_000))
def test_locate_per_file_never_grows_with_more_files_when_the_points_decrease(a, b):
    low, high = sorted((a, b))
    assert COSTS.locate_per_file_s(high) <= COSTS.locate_per_file_s(low) + 1e-9


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"locate_s": ()}, "at least one"),
        ({"locate_s": ((2, 1.0), (2, 1.0))}, "increase"),
        ({"locate_s": ((0, 1.0),)}, "start at 1"),
        ({"rate_bytes_per_s": 0.0}, "rate_bytes_per_s"),
        ({"mount_s": -1.0}, "negative"),
    ],
)
def test_bad_costs_are_refused(changes, message):
    values = {
        "mount_s": 1.0,
        "unmount_s": 1.0,
        "rate_bytes_per_s": 1.0,
        "overhead_s": 1.0,
        "locate_s": ((1, 1.0),),
    }
    with pytest.raises(ValueError, match=message):
        LibraryCosts(**{**values, **changes})
