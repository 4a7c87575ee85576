"""Seed 003 recomputed: which files-per-mount regime its efficiency curve belongs to, what that predicts for
STAR's nine 9940B drives, and how its observed rates compare.

The published curve (CERN/IT 2005, quoted by STAR for a 30 MB/s 9940B-class drive) varied both file size and
files per cartridge; STAR quotes two of its points without saying which files-per-mount curve they sit on.
The regime is decided by fitting n, the one free quantity of the efficiency formula once the drive is fixed,
to both points at once, then checking that each point alone gives the same n and that STAR's own 1.2 files
per mount does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from hsm_adapters.simulated.physics import TapePhysics, analytic_efficiency
from studies.tape.curves import (
    FilesPerMountFit,
    aggregate_rate_mb_s,
    effective_overhead_s,
    estimated_efficiency_keys,
    files_per_mount_for,
    fit_files_per_mount,
    size_for_efficiency,
    with_scaled_timings,
)
from studies.tape.published import PublishedFigure, Star2006Figures

STAR_PROFILE = "t9940b"
EFFICIENCY_TOLERANCE_POINTS = 1.0  # where the seed gives a single value: within 1 point of efficiency
SENSITIVITY_FACTORS = (0.75, 1.25)  # the 9940B's estimated timings scaled by these


def percent(fraction: float) -> float:
    return 100 * fraction


@dataclass(frozen=True)
class SensitivityRow:
    """The regime fit redone with the drive's estimated timings scaled by `factor`."""

    factor: float
    fit: FilesPerMountFit


@dataclass(frozen=True)
class RegimeAnalysis:
    fit: FilesPerMountFit  # both published points at once
    n_from_mudst: float | None  # the 84 MB point alone
    n_from_event: float | None  # the middle of the 284 MB range alone
    n_range: (
        tuple[float, float] | None
    )  # where both statements hold (84 MB within tolerance, 284 MB in range)
    typical_files_per_mount: float  # STAR's own regime
    at_typical: tuple[float, float]  # efficiency of 84 and 284 MB files at STAR's own regime
    sensitivity: tuple[SensitivityRow, ...]
    estimated_keys: tuple[str, ...]  # the drive's estimated values that enter the efficiency

    @property
    def files_per_mount(self) -> float:
        return self.fit.files_per_mount


@dataclass(frozen=True)
class SmallFiles:
    size_bytes: int  # the seed's "below 12 MB"
    efficiency: float  # at that size, in the fitted regime
    one_percent_size_bytes: int | None  # below this size the efficiency is under 1 %
    rate_mb_s: float  # nine drives at that size


@dataclass(frozen=True)
class ObservedRate:
    """One of STAR's observed aggregate rates against the model."""

    figure: PublishedFigure
    at_fit_mb_s: float  # predicted in the published curve's regime
    at_typical_mb_s: float  # predicted at STAR's own 1.2 files per mount
    implied_files_per_mount: float | None  # the regime that gives the observed rate
    implied_overhead_s: float  # the one per-file cost that gives it
    model_overhead_at_fit_s: float  # t_file + T_mount/n of the model in the published curve's regime


@dataclass(frozen=True)
class Star2006Analysis:
    figures: Star2006Figures
    regime: RegimeAnalysis
    small_files: SmallFiles
    best_hour_mb_s: float
    improvement: float  # efficiency ratio 284 / 84 MB in the fitted regime
    observed: tuple[ObservedRate, ...]
    published_overhead_s: tuple[float, float]  # one per-file cost through each published point


def _range_of_n(physics: TapePhysics, figures: Star2006Figures) -> tuple[float, float] | None:
    mudst, event = figures["efficiency_mudst"], figures["efficiency_event"]
    tolerance = EFFICIENCY_TOLERANCE_POINTS / 100
    bounds = (
        (mudst.file_size_bytes, mudst.low / 100 - tolerance, mudst.high / 100 + tolerance),
        (event.file_size_bytes, event.low / 100, event.high / 100),
    )
    low, high = 1.0, float("inf")
    for size, lowest, highest in bounds:
        n_low = files_per_mount_for(physics, size, lowest)
        n_high = files_per_mount_for(physics, size, highest)
        if n_low is None or n_high is None:
            return None
        low, high = max(low, n_low), min(high, n_high)
    return (low, high) if low <= high else None


def _targets(figures: Star2006Figures) -> tuple[tuple[int, float], tuple[int, float]]:
    mudst, event = figures["efficiency_mudst"], figures["efficiency_event"]
    return (mudst.file_size_bytes, mudst.midpoint / 100), (event.file_size_bytes, event.midpoint / 100)


def analyse_regime(physics: TapePhysics, figures: Star2006Figures) -> RegimeAnalysis:
    mudst_target, event_target = _targets(figures)
    typical = figures.typical_files_per_mount
    sensitivity = tuple(
        SensitivityRow(
            factor,
            fit_files_per_mount(TapePhysics(with_scaled_timings(physics.profile, factor)), _targets(figures)),
        )
        for factor in SENSITIVITY_FACTORS
    )
    return RegimeAnalysis(
        fit=fit_files_per_mount(physics, (mudst_target, event_target)),
        n_from_mudst=files_per_mount_for(physics, *mudst_target),
        n_from_event=files_per_mount_for(physics, *event_target),
        n_range=_range_of_n(physics, figures),
        typical_files_per_mount=typical,
        at_typical=(
            analytic_efficiency(physics, mudst_target[0], typical),
            analytic_efficiency(physics, event_target[0], typical),
        ),
        sensitivity=sensitivity,
        estimated_keys=estimated_efficiency_keys(physics.profile),
    )


def _observed(
    physics: TapePhysics, figures: Star2006Figures, regime: RegimeAnalysis
) -> tuple[ObservedRate, ...]:
    drives = figures.drives
    rate = physics.profile.rate_bytes_per_s / 1_000_000
    rows = []
    for key in ("observed_rate_mudst", "observed_rate_event"):
        figure = figures[key]
        size = figure.file_size_bytes
        efficiency = figure.midpoint / (drives * rate)
        fitted = analytic_efficiency(physics, size, regime.files_per_mount)
        rows.append(
            ObservedRate(
                figure=figure,
                at_fit_mb_s=aggregate_rate_mb_s(physics, size, regime.files_per_mount, drives),
                at_typical_mb_s=aggregate_rate_mb_s(physics, size, regime.typical_files_per_mount, drives),
                implied_files_per_mount=files_per_mount_for(physics, size, efficiency),
                implied_overhead_s=effective_overhead_s(physics, size, efficiency),
                model_overhead_at_fit_s=effective_overhead_s(physics, size, fitted),
            )
        )
    return tuple(rows)


def analyse_star2006(physics: TapePhysics, figures: Star2006Figures) -> Star2006Analysis:
    regime = analyse_regime(physics, figures)
    n = regime.files_per_mount
    small = figures["efficiency_small"]
    small_efficiency = analytic_efficiency(physics, small.file_size_bytes, n)
    mudst, event = figures["efficiency_mudst"], figures["efficiency_event"]
    mudst_efficiency = analytic_efficiency(physics, mudst.file_size_bytes, n)
    event_efficiency = analytic_efficiency(physics, event.file_size_bytes, n)
    return Star2006Analysis(
        figures=figures,
        regime=regime,
        small_files=SmallFiles(
            size_bytes=small.file_size_bytes,
            efficiency=small_efficiency,
            one_percent_size_bytes=size_for_efficiency(physics, n, small.high / 100),
            rate_mb_s=aggregate_rate_mb_s(physics, small.file_size_bytes, n, figures.drives),
        ),
        best_hour_mb_s=aggregate_rate_mb_s(physics, mudst.file_size_bytes, n, figures.drives),
        improvement=event_efficiency / mudst_efficiency,
        observed=_observed(physics, figures, regime),
        published_overhead_s=(
            effective_overhead_s(physics, mudst.file_size_bytes, mudst.midpoint / 100),
            effective_overhead_s(physics, event.file_size_bytes, event.midpoint / 100),
        ),
    )
