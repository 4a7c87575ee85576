"""The analytic curve checked against the discrete-event library.

Each point builds a seeded catalogue of cartridges holding n files of one size at random places ("spread"
layout: the same law as the analytic formula's layouts), submits each cartridge's files as one batch to a
`Library` in tape order, runs it on its virtual clock until idle, and measures efficiency as time spent
streaming over time the drives were busy (robot moves, load, locates, reads, rewind and unload). A fractional
n mixes cartridges of floor(n) and floor(n)+1 files in the proportion that gives that mean, which is exactly
what the formula's interpolation between neighbours means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hsm_adapters.base import Batch, BatchFile
from hsm_adapters.simulated.catalogue import Catalogue, generate_catalogue
from hsm_adapters.simulated.library import Discipline, Library
from hsm_adapters.simulated.physics import TapePhysics, analytic_efficiency
from studies.tape.curves import MB

AGREEMENT = 0.05  # relative: the simulator and the formula must agree within 5 %
_SEED = 2006


@dataclass(frozen=True)
class SimulatedPoint:
    profile: str
    size_bytes: int
    files_per_mount: float  # the catalogue's mean (a fractional request is rounded to whole cartridges)
    drives: int
    robots: int
    cartridges: int
    files: int
    mounts: int
    analytic: float
    simulated: float  # streaming time / busy time, summed over drives
    simulated_rate_mb_s: float  # bytes staged / time to stage them all
    analytic_rate_mb_s: float  # drives · R · analytic efficiency

    @property
    def relative_difference(self) -> float:
        return self.simulated / self.analytic - 1

    @property
    def agrees(self) -> bool:
        return abs(self.relative_difference) <= AGREEMENT


def _catalogue(physics: TapePhysics, size_bytes: int, files_per_mount: float, cartridges: int) -> Catalogue:
    low = math.floor(files_per_mount)
    with_one_more = round((files_per_mount - low) * cartridges)
    groups = [
        (count, files)
        for count, files in ((cartridges - with_one_more, low), (with_one_more, low + 1))
        if count
    ]
    model = f"fixed:{size_bytes}"
    if len(groups) == 1:
        count, files = groups[0]
        return generate_catalogue(_SEED, count, files, model, physics.profile, layout="spread")
    paths: list[str] = []
    sizes: list[int] = []
    tapes: list[str] = []
    positions: list[int] = []
    for index, (count, files) in enumerate(groups):
        part = generate_catalogue(_SEED + index, count, files, model, physics.profile, layout="spread")
        for path, size, tape, position in part.rows():
            # Both parts name their tapes T00001...: a prefix per part keeps them apart.
            paths.append(f"/n{files}{path}")
            sizes.append(size)
            tapes.append(f"N{files}-{tape}")
            positions.append(position)
    return Catalogue(paths, sizes, tapes, positions, capacity_bytes=physics.profile.capacity_bytes)


def simulate_point(
    physics: TapePhysics,
    size_bytes: int,
    files_per_mount: float,
    *,
    cartridges: int,
    drives: int = 1,
    robots: int | None = None,
) -> SimulatedPoint:
    """Read every file of a fresh catalogue, one mount per cartridge, and compare with the formula."""
    if files_per_mount < 1 or cartridges < 1:
        raise ValueError(f"need n >= 1 and at least one cartridge, not n={files_per_mount}, {cartridges}")
    catalogue = _catalogue(physics, size_bytes, files_per_mount, cartridges)
    robot_count = drives if robots is None else robots
    # No dismount delay: a cartridge leaves as soon as its last file is read, as the formula assumes.
    library = Library(
        catalogue,
        physics,
        drives=drives,
        robots=robot_count,
        discipline=Discipline.TAPE_ORDERED,
        dismount_delay_s=0.0,
    )
    for number, tape in enumerate(catalogue.tapes):
        files = tuple(
            BatchFile(entry.path, entry.path, entry.position_bytes, entry.size_bytes)
            for entry in catalogue.on_tape(tape)
        )
        library.submit(Batch(key=f"mount-{number}", tape=tape, files=files), at=0.0)
    library.run_until_idle()
    stats = library.stats()
    if stats.files_staged != len(catalogue) or stats.mounts != len(catalogue.tapes):
        raise RuntimeError(
            f"{physics.profile.name}: staged {stats.files_staged} of {len(catalogue)} files in "
            f"{stats.mounts} "
            f"mounts of {len(catalogue.tapes)} cartridges"
        )
    mean_files = len(catalogue) / len(catalogue.tapes)
    analytic = analytic_efficiency(physics, size_bytes, mean_files)
    return SimulatedPoint(
        profile=physics.profile.name,
        size_bytes=size_bytes,
        files_per_mount=mean_files,
        drives=drives,
        robots=robot_count,
        cartridges=len(catalogue.tapes),
        files=len(catalogue),
        mounts=stats.mounts,
        analytic=analytic,
        simulated=sum(stats.drive_read_s.values()) / sum(stats.drive_busy_s.values()),
        simulated_rate_mb_s=stats.bytes_staged / stats.now_s / MB,
        analytic_rate_mb_s=drives * physics.profile.rate_bytes_per_s * analytic / MB,
    )


def cartridges_for(files_per_mount: float, files: int, minimum: int) -> int:
    """Enough cartridges for about `files` files, and never fewer than `minimum` mounts."""
    return max(minimum, round(files / files_per_mount))
