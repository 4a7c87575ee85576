"""The CSV tables behind the tape study's figures and findings (efficiencies in per cent, sizes in bytes and
decimal MB, rates in decimal MB/s, times in seconds)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from studies.result import write_csv
from studies.tape.analysis import HALF_EFFICIENCY, TapeEfficiencyAnalysis
from studies.tape.curves import MB, CurvePoint, estimated_efficiency_keys
from studies.tape.published import DATA_DIR, PUBLISHED_CSV
from studies.tape.simulation import SimulatedPoint

STAR_CURVES_CSV = "star_9940b_curves.csv"
REGIME_CSV = "star_regime_fit.csv"
OBSERVED_CSV = "star_observed_rates.csv"
PROFILE_CURVES_CSV = "profile_curves.csv"
SWEEP_CSV = "profile_files_per_mount.csv"
FILE_TYPES_CSV = "star_file_types.csv"
HALF_SIZES_CSV = "half_efficiency_sizes.csv"
HALF_CURVES_CSV = "lto9_half_efficiency_curves.csv"
CROSS_CHECK_CSV = "simulator_cross_check.csv"
CONTENTION_CSV = "robot_contention.csv"
PUBLISHED_COPY_CSV = "seed003_published_figures.csv"

_CURVE_COLUMNS = (
    "profile",
    "files_per_mount",
    "size_bytes",
    "size_mb",
    "efficiency_percent",
    "rate_per_drive_mb_s",
    "read_s_per_file",
    "file_s_per_file",
    "mount_s_per_mount",
    "effective_overhead_s_per_file",
)


def _curve_rows(points: Iterable[CurvePoint]) -> list[tuple[object, ...]]:
    return [
        (
            point.profile,
            point.files_per_mount,
            point.size_bytes,
            point.size_mb,
            100 * point.efficiency,
            point.rate_per_drive_mb_s,
            point.read_s,
            point.file_s,
            point.mount_s,
            point.effective_overhead_s,
        )
        for point in points
    ]


def _simulated_rows(points: Sequence[SimulatedPoint]) -> list[tuple[object, ...]]:
    return [
        (
            point.profile,
            point.size_bytes,
            point.size_bytes / MB,
            point.files_per_mount,
            point.drives,
            point.robots,
            point.cartridges,
            point.files,
            100 * point.analytic,
            100 * point.simulated,
            100 * point.relative_difference,
            "yes" if point.agrees else "no",
            point.analytic_rate_mb_s,
            point.simulated_rate_mb_s,
        )
        for point in points
    ]


_SIMULATED_COLUMNS = (
    "profile",
    "size_bytes",
    "size_mb",
    "files_per_mount",
    "drives",
    "robots",
    "cartridges",
    "files",
    "analytic_efficiency_percent",
    "simulated_efficiency_percent",
    "relative_difference_percent",
    "within_5_percent",
    "analytic_rate_mb_s",
    "simulated_rate_mb_s",
)


def write_tape_tables(analysis: TapeEfficiencyAnalysis, out_dir: Path) -> dict[str, Path]:
    """Write every table; returns them by file name."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = [
        write_csv(
            out_dir / STAR_CURVES_CSV,
            _CURVE_COLUMNS,
            _curve_rows(point for n in sorted(analysis.star_curves) for point in analysis.star_curves[n]),
        ),
        _regime_table(analysis, out_dir / REGIME_CSV),
        _observed_table(analysis, out_dir / OBSERVED_CSV),
        write_csv(
            out_dir / PROFILE_CURVES_CSV,
            _CURVE_COLUMNS,
            _curve_rows(
                point for key in sorted(analysis.profile_curves) for point in analysis.profile_curves[key]
            ),
        ),
        write_csv(
            out_dir / SWEEP_CSV,
            _CURVE_COLUMNS,
            _curve_rows(
                point for key in sorted(analysis.sweep_curves) for point in analysis.sweep_curves[key]
            ),
        ),
        _file_types_table(analysis, out_dir / FILE_TYPES_CSV),
        _half_sizes_table(analysis, out_dir / HALF_SIZES_CSV),
        write_csv(
            out_dir / HALF_CURVES_CSV,
            _CURVE_COLUMNS,
            _curve_rows(point for n in sorted(analysis.half_curves) for point in analysis.half_curves[n]),
        ),
        write_csv(out_dir / CROSS_CHECK_CSV, _SIMULATED_COLUMNS, _simulated_rows(analysis.cross_check)),
        write_csv(out_dir / CONTENTION_CSV, _SIMULATED_COLUMNS, _simulated_rows(analysis.robot_contention)),
        Path(shutil.copyfile(DATA_DIR / PUBLISHED_CSV, out_dir / PUBLISHED_COPY_CSV)),
    ]
    return {table.name: table for table in tables}


def _regime_table(analysis: TapeEfficiencyAnalysis, path: Path) -> Path:
    regime = analysis.star.regime
    rows: list[tuple[object, ...]] = [
        (
            "least squares on both published points",
            regime.files_per_mount,
            100 * regime.fit.fitted[0],
            100 * regime.fit.fitted[1],
            "the published curve's regime",
        ),
        ("84 MB point alone (8 %)", regime.n_from_mudst, "", "", "n at which 84 MB files reach 8 %"),
        ("284 MB point alone (22.5 %, middle of 20-25)", regime.n_from_event, "", "", ""),
    ]
    if regime.n_range is not None:
        low, high = regime.n_range
        rows.append(
            ("lowest n meeting both statements", low, "", "", "84 MB within 1 point, 284 MB in 20-25 %")
        )
        rows.append(("highest n meeting both statements", high, "", "", ""))
    rows.append(
        (
            "STAR's usual files per mount",
            regime.typical_files_per_mount,
            100 * regime.at_typical[0],
            100 * regime.at_typical[1],
            "the regime STAR reports for its own requests",
        )
    )
    for row in regime.sensitivity:
        rows.append(
            (
                f"least squares, estimated 9940B timings x{row.factor:g}",
                row.fit.files_per_mount,
                100 * row.fit.fitted[0],
                100 * row.fit.fitted[1],
                f"estimated keys scaled: {', '.join(regime.estimated_keys)}",
            )
        )
    return write_csv(
        path,
        ("case", "files_per_mount", "efficiency_84mb_percent", "efficiency_284mb_percent", "note"),
        rows,
    )


def _observed_table(analysis: TapeEfficiencyAnalysis, path: Path) -> Path:
    return write_csv(
        path,
        (
            "figure",
            "file_size_mib",
            "observed_mb_s",
            "model_at_fitted_n_mb_s",
            "model_at_star_usual_n_mb_s",
            "implied_files_per_mount",
            "implied_overhead_s_per_file",
            "model_overhead_at_fitted_n_s_per_file",
        ),
        [
            (
                row.figure.key,
                row.figure.file_size_mib,
                row.figure.midpoint,
                row.at_fit_mb_s,
                row.at_typical_mb_s,
                "" if row.implied_files_per_mount is None else row.implied_files_per_mount,
                row.implied_overhead_s,
                row.model_overhead_at_fit_s,
            )
            for row in analysis.star.observed
        ],
    )


def _file_types_table(analysis: TapeEfficiencyAnalysis, path: Path) -> Path:
    types = analysis.file_types
    labels = list(types.series)
    return write_csv(
        path,
        ("file_type", "average_bytes", "average_mb", *[f"efficiency_percent: {label}" for label in labels]),
        [
            (name, size, size / MB, *[100 * types.series[label][row] for label in labels])
            for row, (name, size) in enumerate(zip(types.names, types.sizes, strict=True))
        ],
    )


def _half_sizes_table(analysis: TapeEfficiencyAnalysis, path: Path) -> Path:
    rows = []
    for (name, n), size in sorted(analysis.half_sizes.items()):
        estimated = ", ".join(estimated_efficiency_keys(analysis.physics[name].profile))
        rows.append(
            (
                name,
                n,
                100 * HALF_EFFICIENCY,
                "" if size is None else size,
                "" if size is None else size / 1e9,
                estimated,
            )
        )
    return write_csv(
        path,
        ("profile", "files_per_mount", "efficiency_percent", "size_bytes", "size_gb", "estimated_keys"),
        rows,
    )
