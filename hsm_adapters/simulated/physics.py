"""The one tape physics model: mount, locate, read, rewind and unmount times for a drive profile.

The engine, the trace replay and the studies all take their times from here; none re-derives them.

Geometry (serpentine): bytes fill wrap 0 from the beginning of tape (BOT) to its end, wrap 1 back from the
end to BOT, wrap 2 forward again, and so on; every wrap holds capacity/wraps bytes. A position is (wrap, lpos)
with lpos the longitudinal fraction 0..1 from BOT. Wraps are grouped in 4 data bands (1 band under 8 wraps).

Locate cost from head h to target t (h == t costs nothing: the drive is already there):

    k · (C0 + L·|Δlpos| + W·[wrap changes] + B·[band changes] + D·[direction changes]
         + R·[target behind the head on its wrap])

C0, L, W, B, D and R are the coefficients CTA fitted on LTO-7 media (CTACostHeuristic.cpp; L is their
per-LPOS slope times the LPOS span of a wrap). One scale k per profile makes the mean over uniformly random
targets from the load point equal the profile's `locate_avg_s`; k comes from a closed form (`_calibrate`).
Details and the measured ordering gains: docs/simulated-library.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from hsm_adapters.simulated.profiles import DriveProfile

# CTA's LTO-7 locate fit (seconds). Its landing-zone term is left out: the geometry has no landing zones.
_CTA_CONSTANT_S = 4.29
_CTA_WRAP_CHANGE_S = 6.69
_CTA_BAND_CHANGE_S = 3.20
_CTA_DIRECTION_CHANGE_S = 5.22
_CTA_BEHIND_S = 11.32
_CTA_FULL_LENGTH_S = 0.0006192 * (171_097 - 2_696)  # per-LPOS slope × LPOS span of one wrap ≈ 104.3 s
_BANDS = 4
_MIN_WRAPS_FOR_BANDS = 8

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TapePosition:
    """Where a byte sits: its wrap and its longitudinal fraction from BOT (0..1).

    The head moves forward (+1) on even wraps and backward (−1) on odd wraps.
    """

    wrap: int
    lpos: float

    @property
    def direction(self) -> int:
        return 1 if self.wrap % 2 == 0 else -1


@dataclass(frozen=True, slots=True)
class LocateCoefficients:
    """The calibrated locate model of one profile: seconds per term, after scaling."""

    scale: float
    constant_s: float
    full_length_s: float  # longitudinal travel over one whole wrap
    wrap_change_s: float
    band_change_s: float
    direction_change_s: float
    behind_s: float


class TapePhysics:
    """Times for one drive profile. Byte offsets count from the start of the tape's data (0 = load point)."""

    __slots__ = (
        "_bands",
        "_bytes_per_wrap",
        "_capacity",
        "_rewind_constant_s",
        "_wraps",
        "coefficients",
        "profile",
    )

    profile: DriveProfile
    coefficients: LocateCoefficients

    def __init__(self, profile: DriveProfile) -> None:
        self.profile = profile
        self._capacity = profile.capacity_bytes
        self._wraps = profile.wraps
        self._bytes_per_wrap = profile.capacity_bytes / profile.wraps
        self._bands = _BANDS if profile.wraps >= _MIN_WRAPS_FOR_BANDS else 1
        self.coefficients = _calibrate(profile.wraps, self._bands, profile.locate_avg_s)
        # rewind = rewind_max·x + c; the mean over a uniform x is rewind_max/2 + c = rewind_avg
        self._rewind_constant_s = profile.rewind_avg_s - profile.rewind_max_s / 2

    # --- geometry ---------------------------------------------------------------------------------------

    def position(self, byte_offset: int) -> TapePosition:
        wrap, lpos = self._wrap_lpos(byte_offset)
        return TapePosition(wrap=wrap, lpos=lpos)

    def band(self, wrap: int) -> int:
        return wrap * self._bands // self._wraps

    def _wrap_lpos(self, byte_offset: float) -> tuple[int, float]:
        if not 0 <= byte_offset <= self._capacity:
            raise ValueError(f"byte offset {byte_offset} is outside the tape (0..{self._capacity})")
        along = byte_offset / self._bytes_per_wrap
        wrap = int(along)
        if wrap >= self._wraps:  # the very end of the last wrap
            wrap = self._wraps - 1
        fraction = along - wrap
        return wrap, (fraction if wrap % 2 == 0 else 1.0 - fraction)

    # --- per-operation times ----------------------------------------------------------------------------

    def locate_s(self, head_byte: int, target_byte: int) -> float:
        """Seconds to position from the head (0 = load point) to the target's first byte."""
        if head_byte == target_byte:
            return 0.0
        # Pure float arithmetic: the engine calls this millions of times.
        head_wrap, head_lpos = self._wrap_lpos(head_byte)
        target_wrap, target_lpos = self._wrap_lpos(target_byte)
        c = self.coefficients
        seconds = c.constant_s + c.full_length_s * abs(target_lpos - head_lpos)
        if head_wrap != target_wrap:
            seconds += c.wrap_change_s
            if (head_wrap - target_wrap) % 2:
                seconds += c.direction_change_s
            if head_wrap * self._bands // self._wraps != target_wrap * self._bands // self._wraps:
                seconds += c.band_change_s
        elif (target_lpos < head_lpos) if head_wrap % 2 == 0 else (target_lpos > head_lpos):
            seconds += c.behind_s
        return seconds

    def read_s(self, size_bytes: int) -> float:
        """Streaming time at the native rate: nothing reads faster."""
        if size_bytes < 0:
            raise ValueError(f"size {size_bytes} is negative")
        return size_bytes / self.profile.rate_bytes_per_s

    def overhead_s(self) -> float:
        """Per file once positioned (file mark, checks)."""
        return self.profile.per_file_overhead_s

    def rewind_s(self, head_byte: int, bytes_moved: int) -> float:
        """Rewind to BOT: the profile's rewind-at-unload class for the bytes read since load when it has
        classes (LTO-9), otherwise rewind_max·x + c with x the head's longitudinal fraction."""
        classes = self.profile.rewind_at_unload
        if classes:
            for bound, seconds in classes:
                if bytes_moved < bound:
                    return seconds
            return classes[-1][1]
        _, lpos = self._wrap_lpos(head_byte)
        return self.profile.rewind_max_s * lpos + self._rewind_constant_s

    def mount_s(self, *, first_load: bool = False) -> float:
        """Robot exchange and load; the first-load penalty only when the caller models new media."""
        seconds = self.profile.robot_exchange_s + self.profile.load_s
        if first_load:
            seconds += self.profile.first_load_penalty_s
        return seconds

    def unmount_s(self, head_byte: int, bytes_moved: int) -> float:
        """Rewind, unload and the robot's move back to the slot."""
        return self.rewind_s(head_byte, bytes_moved) + self.profile.unload_s + self.profile.robot_exchange_s

    def expected_rewind_s(self, bytes_moved: int) -> float:
        """Mean rewind over uniformly random head positions (the class time when the profile has classes)."""
        if self.profile.rewind_at_unload:
            return self.rewind_s(0, bytes_moved)
        return self.profile.rewind_avg_s

    def expected_single_recall_s(self, size_bytes: int) -> float:
        """One file of a random position alone on its mount:
        robot + load + locate_avg + overhead + read + rewind + unload + robot."""
        p = self.profile
        return (
            self.mount_s()
            + p.locate_avg_s
            + p.per_file_overhead_s
            + self.read_s(size_bytes)
            + self.expected_rewind_s(size_bytes)
            + p.unload_s
            + p.robot_exchange_s
        )

    # --- vectorised forms (studies, orderings); same model as locate_s and rewind_s -------------------------

    def wrap_lpos_many(self, byte_offsets: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], FloatArray]:
        offsets = np.asarray(byte_offsets, dtype=np.float64)
        if offsets.size and (offsets.min() < 0 or offsets.max() > self._capacity):
            raise ValueError(f"byte offsets must lie within the tape (0..{self._capacity})")
        along = offsets / self._bytes_per_wrap
        wrap = np.minimum(along.astype(np.int64), self._wraps - 1)
        fraction = along - wrap
        odd = (wrap % 2).astype(bool)
        return wrap, np.where(odd, 1.0 - fraction, fraction)

    def locate_many(self, head_bytes: npt.ArrayLike, target_bytes: npt.ArrayLike) -> FloatArray:
        """locate_s element by element (broadcasting), for studies and orderings."""
        heads = np.asarray(head_bytes, dtype=np.float64)
        targets = np.asarray(target_bytes, dtype=np.float64)
        head_wrap, head_lpos = self.wrap_lpos_many(heads)
        target_wrap, target_lpos = self.wrap_lpos_many(targets)
        c = self.coefficients
        seconds = c.constant_s + c.full_length_s * np.abs(target_lpos - head_lpos)
        other_wrap = head_wrap != target_wrap
        seconds = seconds + other_wrap * c.wrap_change_s
        seconds = seconds + (other_wrap & ((head_wrap - target_wrap) % 2 != 0)) * c.direction_change_s
        seconds = seconds + (self.band_many(head_wrap) != self.band_many(target_wrap)) * c.band_change_s
        forward = head_wrap % 2 == 0
        behind = ~other_wrap & np.where(forward, target_lpos < head_lpos, target_lpos > head_lpos)
        seconds = seconds + behind * c.behind_s
        result: FloatArray = np.where(heads == targets, 0.0, seconds)
        return result

    def band_many(self, wraps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        result: npt.NDArray[np.int64] = wraps * self._bands // self._wraps
        return result

    def rewind_many(self, head_bytes: npt.ArrayLike, bytes_moved: npt.ArrayLike) -> FloatArray:
        """rewind_s element by element."""
        moved = np.asarray(bytes_moved, dtype=np.float64)
        classes = self.profile.rewind_at_unload
        if classes:
            bounds = np.array([bound for bound, _ in classes], dtype=np.float64)
            times = np.array([seconds for _, seconds in classes], dtype=np.float64)
            index = np.minimum(np.searchsorted(bounds, moved, side="right"), len(classes) - 1)
            by_class: FloatArray = times[index] + 0.0 * np.asarray(head_bytes, dtype=np.float64)
            return by_class
        _, lpos = self.wrap_lpos_many(head_bytes)
        by_position: FloatArray = self.profile.rewind_max_s * lpos + self._rewind_constant_s + 0.0 * moved
        return by_position


def _calibrate(wraps: int, bands: int, locate_avg_s: float) -> LocateCoefficients:
    """Scale CTA's coefficients so the mean locate from the load point to a uniform target is locate_avg_s.

    From BOT (wrap 0, lpos 0, moving forward) a uniformly random target sits on each wrap with probability
    1/wraps and at a uniform lpos, so E|Δlpos| = 1/2, nothing is behind the head, and the wrap, band and
    direction terms are averaged exactly over the wraps. The mean is linear in the coefficients, so one scale
    factor matches it.
    """
    other_wraps = range(1, wraps)
    wrap_changes = len(other_wraps) / wraps
    direction_changes = sum(1 for wrap in other_wraps if wrap % 2) / wraps
    band_changes = sum(1 for wrap in other_wraps if wrap * bands // wraps != 0) / wraps
    unscaled_mean = (
        _CTA_CONSTANT_S
        + _CTA_FULL_LENGTH_S / 2
        + _CTA_WRAP_CHANGE_S * wrap_changes
        + _CTA_DIRECTION_CHANGE_S * direction_changes
        + _CTA_BAND_CHANGE_S * band_changes
    )
    scale = locate_avg_s / unscaled_mean
    return LocateCoefficients(
        scale=scale,
        constant_s=scale * _CTA_CONSTANT_S,
        full_length_s=scale * _CTA_FULL_LENGTH_S,
        wrap_change_s=scale * _CTA_WRAP_CHANGE_S,
        band_change_s=scale * _CTA_BAND_CHANGE_S,
        direction_change_s=scale * _CTA_DIRECTION_CHANGE_S,
        behind_s=scale * _CTA_BEHIND_S,
    )


# --- orderings ------------------------------------------------------------------------------------------


def shortest_locate_first(
    physics: TapePhysics,
    head_byte: int,
    positions: Sequence[int],
    sizes: Sequence[int] | None = None,
) -> list[int]:
    """Greedy shortest-locate-time-first: indices into `positions` in the order to read them.

    After each file the head sits at its end (position + size; + 0 when sizes are not given). Ties go to the
    lower index, so the order is deterministic.
    """
    count = len(positions)
    if sizes is not None and len(sizes) != count:
        raise ValueError(f"{len(sizes)} sizes for {count} positions")
    starts = np.asarray(positions, dtype=np.float64)
    ends = starts + (np.asarray(sizes, dtype=np.float64) if sizes is not None else 0.0)
    remaining = np.ones(count, dtype=bool)
    head = float(head_byte)
    order: list[int] = []
    for _ in range(count):
        costs = physics.locate_many(head, starts)
        costs[~remaining] = np.inf
        chosen = int(np.argmin(costs))
        order.append(chosen)
        remaining[chosen] = False
        head = float(ends[chosen])
    return order


# --- the efficiency formula -----------------------------------------------------------------------------

_SAMPLED_LOCATES = 200_000  # locates per estimate: standard error about 0.1 % of the mean
_MIN_MOUNTS = 64
_SEED = 20_061_026  # fixed: the same arguments always give the same figure


@dataclass(frozen=True, slots=True)
class MountCosts:
    """Expected costs of one mount reading n files of one size in position order (seconds)."""

    read_s: float  # per file, S/R
    file_s: float  # per file: mean locate (first one from the load point) + overhead
    mount_s: float  # per mount: robot + load + E[rewind from where the last file ends] + unload + robot


def analytic_efficiency(physics: TapePhysics, size_bytes: int, files_per_mount: float) -> float:
    """efficiency = (S/R) / (S/R + t_file + T_mount/n); terms as in `mount_costs`."""
    costs = mount_costs(physics, size_bytes, files_per_mount)
    return costs.read_s / (costs.read_s + costs.file_s + costs.mount_s / files_per_mount)


def mount_costs(physics: TapePhysics, size_bytes: int, files_per_mount: float) -> MountCosts:
    """The terms of the efficiency formula for n files of size S at random places on a full cartridge.

    t_file = (E[locate from the load point to the first file] + (n−1)·E[locate between successive files in
    position order]) / n + overhead, and T_mount = 2·robot + load + unload + E[rewind from the end of the last
    file]. The expectations are exact for the model; they are evaluated once per (profile, S, n) over a fixed,
    seeded set of layouts (files at uniformly random non-overlapping places, the head at each file's end after
    reading it), so the figure is deterministic. A fractional n interpolates linearly between its neighbours.
    """
    if files_per_mount < 1:
        raise ValueError(f"files per mount must be at least 1, not {files_per_mount}")
    if size_bytes <= 0:
        raise ValueError(f"file size must be positive, not {size_bytes}")
    low = math.floor(files_per_mount)
    high = math.ceil(files_per_mount)
    locate_low, rewind_low = _expected_locates(physics, size_bytes, low)
    if high == low:
        total_locate, rewind = locate_low, rewind_low
    else:
        locate_high, rewind_high = _expected_locates(physics, size_bytes, high)
        weight = files_per_mount - low
        total_locate = (1 - weight) * locate_low + weight * locate_high
        rewind = (1 - weight) * rewind_low + weight * rewind_high
    p = physics.profile
    return MountCosts(
        read_s=physics.read_s(size_bytes),
        file_s=total_locate / files_per_mount + p.per_file_overhead_s,
        mount_s=2 * p.robot_exchange_s + p.load_s + p.unload_s + rewind,
    )


def _expected_locates(physics: TapePhysics, size_bytes: int, files: int) -> tuple[float, float]:
    """(E[sum of the n locates of one mount], E[rewind at its end]) for n files read in position order."""
    return _expected_locates_cached(physics, size_bytes, files)


@lru_cache(maxsize=4096)
def _expected_locates_cached(physics: TapePhysics, size_bytes: int, files: int) -> tuple[float, float]:
    capacity = physics.profile.capacity_bytes
    free = capacity - files * size_bytes
    if free < 0:
        raise ValueError(f"{files} files of {size_bytes} bytes do not fit on one {capacity}-byte cartridge")
    mounts = max(_MIN_MOUNTS, math.ceil(_SAMPLED_LOCATES / files))
    rng = np.random.default_rng(_SEED)
    # The free space splits into n+1 gaps with a flat Dirichlet law: files at uniform non-overlapping places.
    gaps = rng.exponential(size=(mounts, files + 1))
    gaps *= free / gaps.sum(axis=1, keepdims=True)
    starts = np.cumsum(gaps[:, :files], axis=1) + size_bytes * np.arange(files)
    starts = np.minimum(starts, capacity - size_bytes)  # rounding must not push a file past the end
    ends = starts + size_bytes
    heads = np.concatenate([np.zeros((mounts, 1)), ends[:, :-1]], axis=1)
    locates = physics.locate_many(heads, starts).sum(axis=1)
    rewinds = physics.rewind_many(ends[:, -1], files * size_bytes)
    return float(locates.mean()), float(rewinds.mean())
