"""Tape efficiency against file size and files per mount: seed 003 (STAR 2006) recomputed and extended.

`run(out_dir, progress)` evaluates the simulated library's efficiency formula for every built-in drive
profile, decides which files-per-mount regime seed 003's published curve belongs to, predicts STAR's
aggregate rates and file-type efficiencies, finds the file size at which an LTO-9 drive loses half its time,
checks the formula against the discrete-event library, and writes the tables, figures and
published-vs-reproduced rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from studies.result import FigureFile, Progress, StudyResult, no_progress, write_comparisons_csv
from studies.sources import STAR_2006
from studies.tape.analysis import (
    HALF_PROFILE,
    PROFILE_FILES_PER_MOUNT,
    SWEEP_SIZES,
    StudySettings,
    TapeEfficiencyAnalysis,
    analyse_tape_efficiency,
)
from studies.tape.comparisons import tape_comparisons
from studies.tape.curves import estimated_efficiency_keys
from studies.tape.figures import (
    FileTypeBars,
    StarCurves,
    cross_check_figure,
    file_types_figure,
    files_per_mount_figure,
    half_efficiency_figure,
    profiles_figure,
    star_efficiency_figure,
)
from studies.tape.findings import tape_findings, tape_headlines
from studies.tape.star2006 import STAR_PROFILE
from studies.tape.tables import (
    CROSS_CHECK_CSV,
    FILE_TYPES_CSV,
    HALF_CURVES_CSV,
    HALF_SIZES_CSV,
    PROFILE_CURVES_CSV,
    PUBLISHED_COPY_CSV,
    STAR_CURVES_CSV,
    SWEEP_CSV,
    write_tape_tables,
)

NAME = "tape-efficiency"
TITLE = "Tape efficiency against file size and files per mount"
_ANALYSIS_STEPS = 6
_FIGURES = 6


def _estimates(analysis: TapeEfficiencyAnalysis) -> str:
    return "; ".join(
        f"{name}: {', '.join(estimated_efficiency_keys(model.profile)) or 'none'}"
        for name, model in analysis.physics.items()
    )


def _figure_jobs(
    analysis: TapeEfficiencyAnalysis, out_dir: Path
) -> list[tuple[str, Callable[[], Path], str]]:
    fitted = analysis.fitted_n
    star_keys = ", ".join(analysis.star.regime.estimated_keys)
    types = analysis.file_types
    return [
        (
            "9940B efficiency and STAR's rates",
            lambda: star_efficiency_figure(
                StarCurves(analysis.star_curves, fitted, analysis.typical_n, analysis.figures.drives),
                analysis.figures,
                out_dir / "star_9940b_efficiency.png",
            ),
            f"9940B efficiency (left) and the aggregate rate of STAR's {analysis.figures.drives} drives "
            "(right) "
            f"against file size, per files per mount n; the bold curve is n = {fitted:.2f}, fitted to the "
            f"published points of {STAR_2006.short} (red), the squares are STAR's observed rates. Its sizes "
            "are MiB. "
            f"Estimated 9940B values: {star_keys}. Data: {STAR_CURVES_CSV}, {PUBLISHED_COPY_CSV}.",
        ),
        (
            "every drive profile",
            lambda: profiles_figure(
                analysis.profile_curves, PROFILE_FILES_PER_MOUNT, out_dir / "profiles_efficiency.png"
            ),
            "Efficiency (top) and delivered rate per drive (bottom; N busy drives deliver N times it) "
            "against "
            "file size for each built-in profile, at 1, 10 and 100 files per mount. Curves stop where n "
            "files "
            f"no longer fit on a cartridge. Estimated values: {_estimates(analysis)}. Data: "
            f"{PROFILE_CURVES_CSV}.",
        ),
        (
            "files per mount",
            lambda: files_per_mount_figure(
                analysis.sweep_curves, SWEEP_SIZES, out_dir / "profiles_files_per_mount.png"
            ),
            "Efficiency against files read per mount for each profile, at three file sizes. Data: "
            f"{SWEEP_CSV}.",
        ),
        (
            "STAR's file types",
            lambda: file_types_figure(
                FileTypeBars(types.names, types.sizes, types.series),
                analysis.figures,
                out_dir / "star_file_types.png",
            ),
            f"Expected efficiency of each STAR file type (average sizes of {STAR_2006.short}) on the 9940B "
            "at "
            "STAR's "
            f"usual {analysis.typical_n:g} files per mount, and on the 9940B, LTO-3 and LTO-9 in the "
            "published "
            f"curve's regime (n = {fitted:.2f}); red: the published points. Data: {FILE_TYPES_CSV}.",
        ),
        (
            "LTO-9 half-efficiency size",
            lambda: half_efficiency_figure(
                analysis.half_curves,
                {n: size for (name, n), size in analysis.half_sizes.items() if name == HALF_PROFILE},
                HALF_PROFILE,
                out_dir / "lto9_half_efficiency.png",
            ),
            "LTO-9 efficiency against file size: below the marked size a drive spends more than half its "
            "time mounting, positioning and rewinding. The kinks are LTO-9's rewind-at-unload classes (5 GB "
            "and "
            "50 GB read per mount). Estimated LTO-9 values: "
            f"{', '.join(estimated_efficiency_keys(analysis.physics[HALF_PROFILE].profile))}. "
            f"Data: {HALF_CURVES_CSV}, {HALF_SIZES_CSV} (every profile).",
        ),
        (
            "simulator cross-check",
            lambda: cross_check_figure(analysis.cross_check, out_dir / "simulator_cross_check.png"),
            "Efficiency measured on the discrete-event library (virtual clock, generated catalogues) "
            "against the "
            f"formula; the band is ±5 %. Data: {CROSS_CHECK_CSV}.",
        ),
    ]


def run(
    out_dir: Path, progress: Progress = no_progress, settings: StudySettings | None = None
) -> StudyResult:
    """Run the study into `out_dir`; `settings` trades resolution for time (the default is the report's)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = settings or StudySettings()
    total = _ANALYSIS_STEPS + 1 + _FIGURES
    done = 0

    def step(name: str) -> None:
        nonlocal done
        progress(name, done, total)
        done += 1

    analysis = analyse_tape_efficiency(chosen, step)
    step("writing tables")
    tables = write_tape_tables(analysis, out_dir)
    drive_rate = analysis.physics[STAR_PROFILE].profile.rate_bytes_per_s / 1_000_000
    comparisons = tape_comparisons(analysis.star, drive_rate)
    comparisons_csv = write_comparisons_csv(comparisons, out_dir / "published_vs_reproduced.csv")
    figures = []
    for name, draw, caption in _figure_jobs(analysis, out_dir):
        step(f"drawing {name}")
        figures.append(FigureFile(draw(), caption))
    progress("done", total, total)
    return StudyResult(
        name=NAME,
        title=TITLE,
        tables=(*tables.values(), comparisons_csv),
        figures=tuple(figures),
        comparisons=comparisons,
        findings=tape_findings(analysis),
        headlines=tape_headlines(analysis),
    )
