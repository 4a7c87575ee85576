import itertools
import math

import pytest

from hsm_adapters.simulated.costs import LOCATE_POINTS, library_costs
from hsm_adapters.simulated.physics import TapePhysics, mount_costs
from hsm_adapters.simulated.profiles import load_profile


@pytest.mark.parametrize("name", ["t9940b", "lto8", "lto9"])
def test_costs_come_from_the_physics(name):
    physics = TapePhysics(load_profile(name))
    profile = physics.profile
    costs = library_costs(physics)
    assert costs.mount_s == profile.robot_exchange_s + profile.load_s
    assert costs.rate_bytes_per_s == profile.rate_bytes_per_s
    assert costs.overhead_s == profile.per_file_overhead_s
    assert [n for n, _ in costs.locate_s] == list(LOCATE_POINTS)
    # one file alone: the mean locate from the load point is the profile's figure
    assert math.isclose(costs.locate_per_file_s(1), profile.locate_avg_s, rel_tol=0.02)
    # more files in one pass are closer together
    per_file = [s for _, s in costs.locate_s]
    assert all(b < a for a, b in itertools.pairwise(per_file))
    assert math.isclose(
        costs.locate_per_file_s(16),
        mount_costs(physics, 1, 16).file_s - profile.per_file_overhead_s,
    )
    assert costs.unmount_s == pytest.approx(
        physics.expected_rewind_s(10 * 10**9) + profile.unload_s + profile.robot_exchange_s
    )


def test_lto9_unmount_takes_the_rewind_class_of_a_10_gb_mount():
    costs = library_costs(TapePhysics(load_profile("lto9")))
    assert costs.unmount_s == 110.0 + 30.0 + 13.0
