"""The tape study's conclusions in words, each with the numbers it rests on."""

from __future__ import annotations

from studies.sources import STAR_2006
from studies.tape.analysis import HALF_PROFILE, TapeEfficiencyAnalysis
from studies.tape.curves import estimated_efficiency_keys
from studies.tape.figures import size_text
from studies.tape.simulation import AGREEMENT
from studies.tape.star2006 import STAR_PROFILE, percent

_WELL_USED = 0.10


def _regime(analysis: TapeEfficiencyAnalysis) -> list[str]:
    regime = analysis.star.regime
    n = regime.files_per_mount
    small, large = (percent(value) for value in regime.fit.fitted)
    typical_small, typical_large = (percent(value) for value in regime.at_typical)
    alone = []
    if regime.n_from_mudst is not None:
        alone.append(f"the 84 MB point alone gives {regime.n_from_mudst:.2f}")
    if regime.n_from_event is not None:
        alone.append(f"the middle of the 284 MB range alone {regime.n_from_event:.2f}")
    span = (
        f"; both statements hold for n = {regime.n_range[0]:.1f} to {regime.n_range[1]:.1f}"
        if regime.n_range is not None
        else "; no single n meets both statements"
    )
    lines = [
        f"Regime of the published curve: about {n:.1f} files per mount. Fitting n, the one free quantity "
        "once "
        f"the drive is fixed, to both published points gives n = {n:.2f} ({small:.1f} % at 84 MB, "
        f"{large:.1f} % "
        f"at 284 MB); {' and '.join(alone)}{span}. At STAR's own {regime.typical_files_per_mount:g} files "
        "per "
        f"mount the model gives {typical_small:.1f} % and {typical_large:.1f} %, a factor "
        f"{small / typical_small:.1f} lower: the quoted points are another curve of the source graph (it "
        "varied "
        "files per cartridge), not STAR's regime.",
    ]
    shifted = ", ".join(f"x{row.factor:g}: n = {row.fit.files_per_mount:.1f}" for row in regime.sensitivity)
    lines.append(
        f"How much this rests on estimates: the 9940B values {', '.join(regime.estimated_keys)} are "
        "estimates. "
        f"Scaling the estimated timings moves the fitted n ({shifted}): the published curve sits at 5 to 10 "
        f"files per mount, never near {regime.typical_files_per_mount:g}."
    )
    overhead_small, overhead_large = analysis.star.published_overhead_s
    model_overhead = analysis.star.observed[0].model_overhead_at_fit_s
    lines.append(
        f"One effective cost per file reproduces each published point ({overhead_small:.1f} s at 84 MB, "
        f"{overhead_large:.1f} s at 284 MB); the model's t_file + T_mount/n at n = {n:.2f} is "
        f"{model_overhead:.1f} s."
    )
    return lines


def _small_files_and_rates(analysis: TapeEfficiencyAnalysis) -> list[str]:
    star = analysis.star
    figures = star.figures
    small = star.small_files
    bound = figures["efficiency_small"].high
    below = (
        f"it falls under {bound:g} % below {size_text(small.one_percent_size_bytes)}"
        if small.one_percent_size_bytes
        else f"it never falls under {bound:g} %"
    )
    observed = star.observed
    ratio_observed = observed[1].figure.midpoint / observed[0].figure.midpoint
    typical_ratio = star.regime.at_typical[1] / star.regime.at_typical[0]
    implied = [row.implied_files_per_mount for row in observed]
    implied_text = (
        f"they need {implied[0]:.1f} and {implied[1]:.1f} files per mount"
        if None not in implied
        else "no files per mount up to 1,000 gives both"
    )
    return [
        f"Small files: at {STAR_2006.short}'s 12 MB ({small.size_bytes / 1e6:.1f}×10⁶ bytes) the fitted "
        "regime gives "
        f"{percent(small.efficiency):.2f} "
        f"% ({percent(small.efficiency) - bound:+.2f} points from the stated bound); {below}. Nine busy "
        "drives "
        f"then deliver {small.rate_mb_s:.1f} MB/s (published: no better than 3 MB/s).",
        f"Best hour: nine busy drives with 84 MB files deliver {star.best_hour_mb_s:.1f} MB/s in the "
        "published "
        "curve's regime (published: 21 MB/s, 70 % of one drive).",
        f"Observed 15 and 50 MB/s: the published curve's regime predicts {observed[0].at_fit_mb_s:.0f} and "
        f"{observed[1].at_fit_mb_s:.0f} MB/s, STAR's usual 1.2 files per mount "
        f"{observed[0].at_typical_mb_s:.1f} "
        f"and {observed[1].at_typical_mb_s:.1f} MB/s. The observed rates lie between: {implied_text} (one "
        f"per-file cost of {observed[0].implied_overhead_s:.0f} s and {observed[1].implied_overhead_s:.0f} "
        "s, "
        f"against {observed[0].model_overhead_at_fit_s:.0f} s in the published curve's regime), inside "
        "STAR's "
        "stated range of 1.2 to 10 or more, as expected when requests submitted in bulk are grouped by tape. "
        f"Their ratio ({ratio_observed:.2f}) is a little above the model's "
        f"{star.improvement:.2f} to {typical_ratio:.2f} between those regimes.",
        _robots(analysis),
    ]


def _robots(analysis: TapeEfficiencyAnalysis) -> str:
    parts = [
        f"{point.simulated_rate_mb_s:.1f} MB/s instead of {point.analytic_rate_mb_s:.1f} at "
        f"{point.files_per_mount:.2f} files per mount "
        f"({100 * (point.simulated_rate_mb_s / point.analytic_rate_mb_s - 1):+.0f} %)"
        for point in analysis.robot_contention
    ]
    drives = analysis.figures.drives
    robot_s = analysis.physics[STAR_PROFILE].profile.robot_exchange_s
    return (
        f"Left out by the formula: if STAR's {drives} drives shared one robot ({robot_s:g} s a move, an "
        "estimate), "
        f"the simulated library delivers {' and '.join(parts)} with 84 MB files; the study does not say how "
        "many "
        "robots served the drives."
    )


def _file_types(analysis: TapeEfficiencyAnalysis) -> str:
    types = analysis.file_types
    labels = list(types.series)
    usual, fitted = types.series[labels[0]], types.series[labels[1]]
    today = types.series[labels[-1]]
    well_used = [name for name, value in zip(types.names, usual, strict=True) if value >= _WELL_USED]
    biggest = types.names[0]
    return (
        f"STAR's file types: at {analysis.typical_n:g} files per mount on the 9940B, {len(well_used)} of "
        f"{len(types.names)} types reach {percent(_WELL_USED):.0f} % (the largest, {biggest} at "
        f"{size_text(types.sizes[0])}: {percent(usual[0]):.1f} %); in the published curve's regime "
        f"{biggest} reaches {percent(fitted[0]):.1f} % and daq_reco_hist ({size_text(types.sizes[-1])}) "
        f"{percent(fitted[-1]):.2f} %. On an LTO-9 drive in that regime {biggest} reaches only "
        f"{percent(today[0]):.1f} %: today's drives need files of gigabytes."
    )


def _half_efficiency(analysis: TapeEfficiencyAnalysis) -> str:
    sizes = {n: size for (name, n), size in analysis.half_sizes.items() if name == HALF_PROFILE}
    profile = analysis.physics[HALF_PROFILE].profile
    parts = [
        f"{n:g} file{'s' if n != 1 else ''} per mount: {size_text(size) if size else 'never reached'}"
        for n, size in sorted(sizes.items())
    ]
    headline = sizes.get(10.0)
    head = (
        f"a site reading 10 files per mount loses half its drive time with files below {size_text(headline)}"
        if headline
        else "10 files per mount never reach half the drive time"
    )
    return (
        f"LTO-9: {head} (half-efficiency size at {'; '.join(parts)}). Estimated values behind it: "
        f"{', '.join(estimated_efficiency_keys(profile))}."
    )


def _cross_check(analysis: TapeEfficiencyAnalysis) -> str:
    points = analysis.cross_check
    worst = max(points, key=lambda point: abs(point.relative_difference))
    several = [point for point in points if point.drives > 1]
    drives = (
        f"; {several[0].drives} drives each with a robot deliver {several[0].simulated_rate_mb_s:.1f} MB/s "
        f"against N·R·efficiency = {several[0].analytic_rate_mb_s:.1f} MB/s"
        if several
        else ""
    )
    verdict = "agree" if all(point.agrees for point in points) else "do NOT all agree"
    return (
        f"Cross-check: the discrete-event library and the formula {verdict} within {percent(AGREEMENT):g} % "
        f"at {len(points)} points; the largest difference is {percent(worst.relative_difference):+.2f} % "
        f"({worst.profile}, {size_text(worst.size_bytes)}, n = {worst.files_per_mount:.2f}){drives}."
    )


def tape_headlines(analysis: TapeEfficiencyAnalysis) -> tuple[str, ...]:
    """For a storage admin: the file size below which an LTO-9 drive spends half its time not reading, and
    what that means for files of the sizes STAR kept in 2006."""
    sizes = {n: size for (name, n), size in analysis.half_sizes.items() if name == HALF_PROFILE}
    headlines = []
    at_ten = sizes.get(10.0)
    if at_ten:
        others = "; ".join(
            f"{size_text(size)} at {n:g} file{'s' if n != 1 else ''} per mount"
            for n, size in sorted(sizes.items())
            if n != 10.0 and size
        )
        headlines.append(
            f"An LTO-9 site reading 10 files per mount loses half its drive time to mounting and positioning "
            f"with files below {size_text(at_ten)} ({others}): group restores by tape, and keep files large."
        )
    types = analysis.file_types
    today = types.series[list(types.series)[-1]]
    headlines.append(
        f"Files of the sizes STAR kept in 2006 are far too small for today's drives: its largest type "
        f"({types.names[0]}, {size_text(types.sizes[0])}) would keep an LTO-9 drive reading only "
        f"{percent(today[0]):.1f} % of its time at {analysis.star.regime.files_per_mount:.0f} files per "
        "mount."
    )
    return tuple(headlines)


def tape_findings(analysis: TapeEfficiencyAnalysis) -> tuple[str, ...]:
    return (
        f"Units: {STAR_2006.short}'s MB are MiB (its size table lists bytes beside them: 298,583,617 bytes "
        "is its 284 "
        "MB), "
        "so its 84, 284 and 12 MB are 88.1, 297.8 and 12.6×10⁶ bytes; rates are in decimal MB/s like the "
        "drive "
        "profiles. Figures and tables give sizes in decimal units.",
        *_regime(analysis),
        *_small_files_and_rates(analysis),
        _file_types(analysis),
        _half_efficiency(analysis),
        _cross_check(analysis),
    )
