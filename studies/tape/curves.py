"""Efficiency curves, inversions and fits over the simulated library's physics.

Nothing here models a drive: every efficiency is `analytic_efficiency` of hsm_adapters.simulated.physics
(efficiency = (S/R) / (S/R + t_file + T_mount/n)), evaluated for a profile. This module only samples it,
inverts it (the files per mount or file size that reach an efficiency) and fits files per mount to
published points.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.optimize import brentq, minimize_scalar

from hsm_adapters.simulated.physics import TapePhysics, analytic_efficiency, mount_costs
from hsm_adapters.simulated.profiles import DriveProfile

MB = 1_000_000
# The profile keys the efficiency formula reads; the others (dismount delay, first-load penalty, mount limits)
# do not enter it. The position-based rewind pair does not apply when the profile has rewind classes.
_EFFICIENCY_KEYS = (
    "rate_bytes_per_s",
    "capacity_bytes",
    "load_s",
    "unload_s",
    "rewind_avg_s",
    "rewind_max_s",
    "locate_avg_s",
    "wraps",
    "per_file_overhead_s",
    "robot_exchange_s",
    "rewind_at_unload",
)
_POSITION_REWIND_KEYS = ("rewind_avg_s", "rewind_max_s")
# Estimated timing keys that can be scaled together to see how much a conclusion rests on them.
_TIMING_KEYS = (
    "load_s",
    "unload_s",
    "rewind_avg_s",
    "rewind_max_s",
    "locate_avg_s",
    "per_file_overhead_s",
    "robot_exchange_s",
)
N_SEARCH_MAX = 1_000.0


@dataclass(frozen=True)
class CurvePoint:
    """The efficiency of n files of one size per mount, with the formula's terms (seconds)."""

    profile: str
    files_per_mount: float
    size_bytes: int
    efficiency: float
    read_s: float  # per file, S/R
    file_s: float  # per file: locate share + overhead
    mount_s: float  # per mount: robot, load, rewind, unload, robot

    @property
    def size_mb(self) -> float:
        return self.size_bytes / MB

    @property
    def rate_per_drive_mb_s(self) -> float:
        return self.efficiency * self.read_rate_mb_s

    @property
    def read_rate_mb_s(self) -> float:
        return self.size_bytes / self.read_s / MB

    @property
    def effective_overhead_s(self) -> float:
        """The one per-file cost that gives the same efficiency: t_file + T_mount/n."""
        return self.file_s + self.mount_s / self.files_per_mount


def estimated_efficiency_keys(profile: DriveProfile) -> tuple[str, ...]:
    """The profile's estimated keys that the efficiency depends on, sorted."""
    used = set(_EFFICIENCY_KEYS)
    if profile.rewind_at_unload:
        used -= set(_POSITION_REWIND_KEYS)
    return tuple(sorted(profile.estimated & used))


def fits_on_cartridge(physics: TapePhysics, size_bytes: int, files_per_mount: float) -> bool:
    return math.ceil(files_per_mount) * size_bytes <= physics.profile.capacity_bytes


def curve_point(physics: TapePhysics, size_bytes: int, files_per_mount: float) -> CurvePoint:
    costs = mount_costs(physics, size_bytes, files_per_mount)
    return CurvePoint(
        profile=physics.profile.name,
        files_per_mount=files_per_mount,
        size_bytes=size_bytes,
        efficiency=analytic_efficiency(physics, size_bytes, files_per_mount),
        read_s=costs.read_s,
        file_s=costs.file_s,
        mount_s=costs.mount_s,
    )


def size_grid(low_bytes: float, high_bytes: float, per_decade: int) -> list[int]:
    """Whole byte sizes 10^(k/per_decade) from low to high: every grid of one density shares its points, so
    curves over overlapping ranges reuse the physics' cached expectations."""
    if per_decade < 1 or not 0 < low_bytes < high_bytes:
        raise ValueError(f"size grid {low_bytes}..{high_bytes} at {per_decade} per decade")
    first = math.ceil(round(math.log10(low_bytes) * per_decade, 9))
    last = math.floor(round(math.log10(high_bytes) * per_decade, 9))
    return [round(10 ** (step / per_decade)) for step in range(first, last + 1)]


def efficiency_curve(physics: TapePhysics, sizes: Sequence[int], files_per_mount: float) -> list[CurvePoint]:
    """The curve over `sizes`, leaving out sizes whose n files do not fit on one cartridge."""
    return [
        curve_point(physics, size, files_per_mount)
        for size in sizes
        if fits_on_cartridge(physics, size, files_per_mount)
    ]


def aggregate_rate_mb_s(physics: TapePhysics, size_bytes: int, files_per_mount: float, drives: int) -> float:
    """N busy drives deliver N·R·efficiency (no wait for a robot or a request)."""
    efficiency = analytic_efficiency(physics, size_bytes, files_per_mount)
    return drives * physics.profile.rate_bytes_per_s * efficiency / MB


def effective_overhead_s(physics: TapePhysics, size_bytes: int, efficiency: float) -> float:
    """The single per-file cost t with efficiency = (S/R) / (S/R + t)."""
    if not 0 < efficiency < 1:
        raise ValueError(f"efficiency {efficiency} is not between 0 and 1")
    return physics.read_s(size_bytes) * (1 / efficiency - 1)


def files_per_mount_for(
    physics: TapePhysics, size_bytes: int, efficiency: float, n_max: float = N_SEARCH_MAX
) -> float | None:
    """The files per mount (1..n_max) at which files of this size reach `efficiency`; None if out of reach.

    Efficiency rises with n: each mount's fixed cost is shared by more files and locates shorten.
    """
    n_max = min(n_max, math.floor(physics.profile.capacity_bytes / size_bytes))
    if n_max < 1:
        return None

    def gap(n: float) -> float:
        return analytic_efficiency(physics, size_bytes, n) - efficiency

    if gap(1.0) > 0 or gap(n_max) < 0:
        return None
    return float(brentq(gap, 1.0, n_max, xtol=1e-3))


def size_for_efficiency(
    physics: TapePhysics, files_per_mount: float, efficiency: float, curve: Sequence[CurvePoint] = ()
) -> int | None:
    """The file size (bytes) at which n files per mount reach `efficiency`; None if no size that fits does.

    Efficiency rises with size; the search runs on log size between 1 kB and the largest size that fits, or
    between the two points of an already computed curve (same profile and n) that straddle the target.
    """
    largest = physics.profile.capacity_bytes // math.ceil(files_per_mount)
    smallest = 1_000
    if largest <= smallest:
        return None

    def gap(log_size: float) -> float:
        return analytic_efficiency(physics, round(math.exp(log_size)), files_per_mount) - efficiency

    low, high = math.log(smallest), math.log(largest)
    for below, above in itertools.pairwise(curve):
        if below.efficiency <= efficiency <= above.efficiency:
            low, high = math.log(below.size_bytes), math.log(above.size_bytes)
            break
    if gap(low) > 0 or gap(high) < 0:
        return None
    return round(math.exp(brentq(gap, low, high, xtol=2e-3)))


@dataclass(frozen=True)
class FilesPerMountFit:
    """The files per mount that best matches published (size, efficiency) points, by least squares in
    points of efficiency, and the efficiencies it gives."""

    files_per_mount: float
    targets: tuple[tuple[int, float], ...]  # (size bytes, published efficiency 0..1)
    fitted: tuple[float, ...]  # efficiency at each target size

    @property
    def rms_points(self) -> float:
        squares = [
            (100 * (fit - target)) ** 2 for fit, (_, target) in zip(self.fitted, self.targets, strict=True)
        ]
        return math.sqrt(sum(squares) / len(squares))


def fit_files_per_mount(
    physics: TapePhysics, targets: Sequence[tuple[int, float]], n_max: float = 100.0
) -> FilesPerMountFit:
    """Least-squares files per mount (1..n_max) for the (size, efficiency) targets."""
    if not targets:
        raise ValueError("no target to fit")

    def squares(n: float) -> float:
        return sum((analytic_efficiency(physics, size, n) - target) ** 2 for size, target in targets)

    result = minimize_scalar(squares, bounds=(1.0, n_max), method="bounded", options={"xatol": 1e-2})
    best = float(result.x)
    return FilesPerMountFit(
        files_per_mount=best,
        targets=tuple(targets),
        fitted=tuple(analytic_efficiency(physics, size, best) for size, _ in targets),
    )


def with_scaled_timings(profile: DriveProfile, factor: float) -> DriveProfile:
    """The profile with every estimated timing key multiplied by `factor` (published ones untouched)."""
    if factor <= 0:
        raise ValueError(f"scale factor {factor} must be positive")
    changes = {key: getattr(profile, key) * factor for key in _TIMING_KEYS if key in profile.estimated}
    scaled = dataclasses.replace(profile, **changes)
    # The position-based rewind needs rewind_max in [avg, 2·avg]; scaling only one of the pair could break it.
    if not scaled.rewind_avg_s <= scaled.rewind_max_s <= 2 * scaled.rewind_avg_s:
        raise ValueError(f"{profile.name}: scaling by {factor} breaks the rewind_avg_s/rewind_max_s pair")
    return scaled
