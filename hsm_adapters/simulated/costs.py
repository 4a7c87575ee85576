"""The simulated library's physics as the plain cost figures policies plan with (`LibraryCosts`).

Policies import only carousel.domain, so they cannot ask `TapePhysics`; whoever knows the library hands them
these numbers in the snapshot. Every figure comes from the one physics model:

- mount_s: robot exchange + load;
- unmount_s: expected rewind after a mount that read `TYPICAL_MOUNT_BYTES` + unload + robot exchange;
- robot_s, robots: a mount's two robot moves (to the drive and back), and the library's robots;
- locate_s: the mean locate per file when n files at uniformly random places are read in one pass in position
  order, for n = 1, 2, 4, ... 4096 (`mount_costs`, which samples the model with a fixed seed).
"""

from __future__ import annotations

from functools import lru_cache

from carousel.domain.planning import LibraryCosts
from hsm_adapters.simulated.physics import TapePhysics, mount_costs
from hsm_adapters.simulated.profiles import DriveProfile

TYPICAL_MOUNT_BYTES = 10 * 10**9  # picks the rewind class of profiles that have classes (LTO-9)
LOCATE_POINTS = tuple(2**k for k in range(13))  # 1 .. 4096 files per pass
_PROBE_FILE_BYTES = 1  # files as points: the locate between them hardly depends on their size


def library_costs(physics: TapePhysics, robots: int = 1) -> LibraryCosts:
    return _library_costs(physics.profile, robots)


@lru_cache(maxsize=32)
def _library_costs(profile: DriveProfile, robots: int) -> LibraryCosts:
    """Cached by profile, not by physics object: every replay builds its own physics, and sampling the locate
    curve costs seconds."""
    physics = TapePhysics(profile)
    locate = tuple(
        (n, mount_costs(physics, _PROBE_FILE_BYTES, n).file_s - profile.per_file_overhead_s)
        for n in LOCATE_POINTS
    )
    return LibraryCosts(
        mount_s=physics.mount_s(),
        unmount_s=(
            physics.expected_rewind_s(TYPICAL_MOUNT_BYTES) + profile.unload_s + profile.robot_exchange_s
        ),
        rate_bytes_per_s=profile.rate_bytes_per_s,
        overhead_s=profile.per_file_overhead_s,
        locate_s=locate,
        robot_s=2 * profile.robot_exchange_s,
        robots=robots,
    )
