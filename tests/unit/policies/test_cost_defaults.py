"""carousel's fallback cost figures (`CostOptions`, for a library that publishes none) are an LTO-8 drive's:
the figures the simulated library publishes for hsm_adapters/simulated/profiles/lto8.toml
(`hsm_adapters.simulated.costs.library_costs`). Policies cannot import the adapters: this test ties them."""

import pytest

from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile
from policies.common import CostOptions

LTO8 = library_costs(TapePhysics(load_profile("lto8")))
DEFAULTS = CostOptions().costs()


def test_mount_unmount_rate_and_overhead_are_the_profiles_exactly():
    assert DEFAULTS.mount_s == LTO8.mount_s
    assert DEFAULTS.unmount_s == LTO8.unmount_s
    assert DEFAULTS.rate_bytes_per_s == LTO8.rate_bytes_per_s
    assert DEFAULTS.overhead_s == LTO8.overhead_s


def test_each_locate_point_is_the_profiles_to_the_tenth_of_a_second_it_is_written_to():
    published = dict(LTO8.locate_s)
    assert DEFAULTS.locate_s[0][0] == LTO8.locate_s[0][0]  # the same range of passes, 1 ..
    assert DEFAULTS.locate_s[-1][0] == LTO8.locate_s[-1][0]  # .. 4096 files
    for files, seconds in DEFAULTS.locate_s:
        assert seconds == pytest.approx(published[files], abs=0.05)


def test_between_its_points_the_default_curve_stays_within_3_5_s_a_file_of_the_profiles():
    """The defaults keep 5 of the profile's 13 points; interpolating between them is at most 3.1 s a file
    off (passes of 2 files), which is the tolerance of a five-point curve, not a drift."""
    for files in range(1, 4097):
        assert DEFAULTS.locate_per_file_s(files) == pytest.approx(LTO8.locate_per_file_s(files), abs=3.5)
