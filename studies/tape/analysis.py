"""Every number of the tape efficiency study, computed from the simulated library's physics.

`analyse_tape_efficiency` evaluates the curves (per drive profile, file size and files per mount), the
STAR 2006 reproduction, STAR's file types, the half-efficiency sizes and the simulator cross-check; the
figures, tables and findings are drawn from the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hsm_adapters.simulated.catalogue import star2006_file_types
from hsm_adapters.simulated.physics import TapePhysics, analytic_efficiency
from hsm_adapters.simulated.profiles import builtin_profiles, load_profile
from studies.tape.curves import (
    CurvePoint,
    curve_point,
    efficiency_curve,
    fits_on_cartridge,
    size_for_efficiency,
    size_grid,
)
from studies.tape.published import Star2006Figures, load_star2006_figures
from studies.tape.simulation import SimulatedPoint, cartridges_for, simulate_point
from studies.tape.star2006 import STAR_PROFILE, Star2006Analysis, analyse_star2006

MB = 1_000_000
GB = 1_000_000_000
PROFILE_FILES_PER_MOUNT = (1.0, 10.0, 100.0)
SWEEP_SIZES = (100 * MB, GB, 10 * GB)
SWEEP_FILES_PER_MOUNT = (1, 2, 5, 10, 30, 100, 300, 1000)
HALF_EFFICIENCY = 0.5
HALF_FILES_PER_MOUNT = (1.0, 10.0, 100.0, 1000.0)
HALF_PROFILE = "lto9"
STAR_DRIVE_GENERATIONS = ("t9940b", "lto3", "lto9")  # STAR's two 2006 drives and today's

Step = Callable[[str], None]


@dataclass(frozen=True)
class StudySettings:
    """How finely the study samples; the defaults make the published report, coarser ones a quick test."""

    points_per_decade: int = 4
    simulated_files: int = 2_400  # per cross-check point (more cartridges when n is small)
    simulated_min_mounts: int = 150


@dataclass(frozen=True)
class FileTypeEfficiencies:
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    series: dict[str, tuple[float, ...]]  # label -> efficiency per type


@dataclass(frozen=True)
class TapeEfficiencyAnalysis:
    settings: StudySettings
    physics: dict[str, TapePhysics]
    star: Star2006Analysis
    star_curves: dict[float, list[CurvePoint]]
    profile_curves: dict[tuple[str, float], list[CurvePoint]]
    sweep_curves: dict[tuple[str, int], list[CurvePoint]]
    file_types: FileTypeEfficiencies
    half_sizes: dict[tuple[str, float], int | None]
    half_curves: dict[float, list[CurvePoint]]
    cross_check: tuple[SimulatedPoint, ...]
    robot_contention: tuple[SimulatedPoint, ...]

    @property
    def figures(self) -> Star2006Figures:
        return self.star.figures

    @property
    def fitted_n(self) -> float:
        return self.star.regime.files_per_mount

    @property
    def typical_n(self) -> float:
        return self.star.regime.typical_files_per_mount


def _star_curves(
    physics: TapePhysics, star: Star2006Analysis, per_decade: int
) -> dict[float, list[CurvePoint]]:
    sizes = size_grid(MB, 10 * GB, per_decade)
    regime = star.regime
    wanted = sorted({1.0, regime.typical_files_per_mount, 2.0, 5.0, regime.files_per_mount, 10.0, 100.0})
    return {n: efficiency_curve(physics, sizes, n) for n in wanted}


def _file_types(physics: dict[str, TapePhysics], fitted: float, typical: float) -> FileTypeEfficiencies:
    types = sorted(star2006_file_types(), key=lambda kind: -kind.average_bytes)
    series_spec = [(STAR_PROFILE, typical, f"{STAR_PROFILE}, {typical:g} files/mount (STAR's usual)")]
    series_spec += [
        (name, fitted, f"{name}, {fitted:.2f} files/mount (published curve)")
        for name in STAR_DRIVE_GENERATIONS
    ]
    series = {
        label: tuple(analytic_efficiency(physics[name], kind.average_bytes, n) for kind in types)
        for name, n, label in series_spec
    }
    return FileTypeEfficiencies(
        names=tuple(kind.name for kind in types),
        sizes=tuple(kind.average_bytes for kind in types),
        series=series,
    )


def _cross_check(
    physics: dict[str, TapePhysics], star: Star2006Analysis, settings: StudySettings
) -> tuple[tuple[SimulatedPoint, ...], tuple[SimulatedPoint, ...]]:
    figures = star.figures
    mudst = figures["efficiency_mudst"].file_size_bytes
    event = figures["efficiency_event"].file_size_bytes
    small = figures["efficiency_small"].file_size_bytes
    fitted, typical = star.regime.files_per_mount, star.regime.typical_files_per_mount
    drives = figures.drives
    single = [
        (STAR_PROFILE, mudst, typical),
        (STAR_PROFILE, mudst, fitted),
        (STAR_PROFILE, event, fitted),
        (STAR_PROFILE, small, fitted),
        ("lto3", event, 10.0),
        ("lto7", 2 * GB, 30.0),
        ("lto9", GB, 10.0),
        ("lto9", 10 * GB, 100.0),
    ]

    def run(name: str, size: int, n: float, drive_count: int, robots: int) -> SimulatedPoint:
        cartridges = cartridges_for(n, settings.simulated_files, settings.simulated_min_mounts * drive_count)
        return simulate_point(
            physics[name], size, n, cartridges=cartridges, drives=drive_count, robots=robots
        )

    checks = [run(name, size, n, 1, 1) for name, size, n in single]
    # N busy drives, each with its own robot: the aggregate rate should be N·R·efficiency.
    checks.append(run(STAR_PROFILE, mudst, fitted, drives, drives))
    # The same drives sharing one robot: what the formula leaves out.
    contention = tuple(run(STAR_PROFILE, mudst, n, drives, 1) for n in (typical, fitted))
    return tuple(checks), contention


def analyse_tape_efficiency(settings: StudySettings, step: Step) -> TapeEfficiencyAnalysis:
    """Compute the study; `step` is told before each stage (for a progress bar)."""
    physics = {name: TapePhysics(load_profile(name)) for name in builtin_profiles()}
    step("fitting the files-per-mount regime of seed 003")
    star = analyse_star2006(physics[STAR_PROFILE], load_star2006_figures())
    step("9940B curves")
    star_curves = _star_curves(physics[STAR_PROFILE], star, settings.points_per_decade)
    step("curves of every drive profile")
    sizes = size_grid(MB, 100 * GB, settings.points_per_decade)
    profile_curves = {
        (name, n): efficiency_curve(model, sizes, n)
        for name, model in physics.items()
        for n in PROFILE_FILES_PER_MOUNT
    }
    sweep_curves = {
        (name, size): [
            curve_point(model, size, n) for n in SWEEP_FILES_PER_MOUNT if fits_on_cartridge(model, size, n)
        ]
        for name, model in physics.items()
        for size in SWEEP_SIZES
    }
    step("STAR's file types")
    file_types = _file_types(physics, star.regime.files_per_mount, star.regime.typical_files_per_mount)
    step("half-efficiency file sizes")
    half_grid = size_grid(10 * MB, 1_000 * GB, settings.points_per_decade)
    half_curves = {n: efficiency_curve(physics[HALF_PROFILE], half_grid, n) for n in HALF_FILES_PER_MOUNT}
    half_sizes: dict[tuple[str, float], int | None] = {}
    for name, model in physics.items():
        for n in HALF_FILES_PER_MOUNT:
            curve = half_curves[n] if name == HALF_PROFILE else profile_curves.get((name, n), [])
            half_sizes[name, n] = size_for_efficiency(model, n, HALF_EFFICIENCY, curve)
    step("discrete-event cross-check")
    cross_check, contention = _cross_check(physics, star, settings)
    return TapeEfficiencyAnalysis(
        settings=settings,
        physics=physics,
        star=star,
        star_curves=star_curves,
        profile_curves=profile_curves,
        sweep_curves=sweep_curves,
        file_types=file_types,
        half_sizes=half_sizes,
        half_curves=half_curves,
        cross_check=cross_check,
        robot_contention=contention,
    )
