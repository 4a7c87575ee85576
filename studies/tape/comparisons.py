"""The tape study's rows of the "published vs reproduced" table.

Tolerances: a published range is its own tolerance (0 outside it); a single efficiency must be matched within
1 point; an aggregate rate of N drives within the rate that 1 point of efficiency gives them (N·R·1 %).
"""

from __future__ import annotations

from studies.result import Comparison
from studies.tape.curves import MB
from studies.tape.published import PublishedFigure
from studies.tape.star2006 import EFFICIENCY_TOLERANCE_POINTS, ObservedRate, Star2006Analysis, percent


def _source(figure: PublishedFigure) -> str:
    return f"{figure.document} ({figure.section})"


def _mb(size_bytes: int) -> str:
    return f"{size_bytes / MB:.3g} MB"


def tape_comparisons(analysis: Star2006Analysis, drive_rate_mb_s: float) -> tuple[Comparison, ...]:
    figures = analysis.figures
    regime = analysis.regime
    n = regime.files_per_mount
    drives = figures.drives
    rate_tolerance = drives * drive_rate_mb_s * EFFICIENCY_TOLERANCE_POINTS / 100
    estimates = f"9940B values that are estimates: {', '.join(regime.estimated_keys)}"
    regime_text = f"at {n:.2f} files per mount (fitted)"
    mudst, event, small = (
        figures["efficiency_mudst"],
        figures["efficiency_event"],
        figures["efficiency_small"],
    )
    fit = regime.fit
    one_percent = analysis.small_files.one_percent_size_bytes
    below = f"under 1 % below {_mb(one_percent)}" if one_percent else "never under 1 %"
    rows = [
        Comparison(
            quantity=f"9940B efficiency, {mudst.file_size_mib:g} MB files",
            source=_source(mudst),
            published_low=mudst.low,
            published_high=mudst.high,
            reproduced=percent(fit.fitted[0]),
            unit="%",
            tolerance=EFFICIENCY_TOLERANCE_POINTS,
            basis="fitted",
            note=f"{regime_text} on this point and the next; {estimates}",
        ),
        Comparison(
            quantity=f"9940B efficiency, {event.file_size_mib:g} MB files",
            source=_source(event),
            published_low=event.low,
            published_high=event.high,
            reproduced=percent(fit.fitted[1]),
            unit="%",
            tolerance=0.0,
            basis="fitted",
            note=regime_text,
        ),
        Comparison(
            quantity=f"9940B efficiency, files below {small.file_size_mib:g} MB",
            source=_source(small),
            published_low=small.low,
            published_high=small.high,
            reproduced=percent(analysis.small_files.efficiency),
            unit="%",
            tolerance=EFFICIENCY_TOLERANCE_POINTS,
            basis="predicted",
            note=f"at {small.file_size_mib:g} MB, {regime_text}; the model is {below}",
        ),
        _improvement(analysis),
        Comparison(
            quantity=f"{drives} drives, files below {small.file_size_mib:g} MB",
            source=_source(figures["rate_small_files"]),
            published_low=figures["rate_small_files"].low,
            published_high=figures["rate_small_files"].high,
            reproduced=analysis.small_files.rate_mb_s,
            unit="MB/s",
            tolerance=rate_tolerance,
            basis="predicted",
            note=f"N·R·efficiency with every drive busy, at {small.file_size_mib:g} MB, {regime_text}",
        ),
        Comparison(
            quantity=f"{drives} drives, best hour, {mudst.file_size_mib:g} MB files",
            source=_source(figures["rate_best_hour"]),
            published_low=figures["rate_best_hour"].low,
            published_high=figures["rate_best_hour"].high,
            reproduced=analysis.best_hour_mb_s,
            unit="MB/s",
            tolerance=rate_tolerance,
            basis="predicted",
            note=f"N·R·efficiency with every drive busy, {regime_text}",
        ),
    ]
    for observed in analysis.observed:
        rows.append(_observed_rate(observed, n, rate_tolerance))
    star_regime = figures["files_per_mount_star"]
    for observed in analysis.observed:
        implied = observed.implied_files_per_mount
        rows.append(
            Comparison(
                quantity=f"Files per mount implied by the observed {observed.figure.midpoint:g} MB/s",
                source=_source(star_regime),
                published_low=star_regime.low,
                published_high=star_regime.high,
                reproduced=float("nan") if implied is None else implied,
                unit="files",
                tolerance=0.0,
                basis="inferred",
                note=(
                    f"the n at which {drives} drives deliver the observed rate with "
                    f"{observed.figure.file_size_mib:g} MB files; published: STAR's stated range"
                ),
            )
        )
    return tuple(rows)


def _improvement(analysis: Star2006Analysis) -> Comparison:
    figure = analysis.figures["improvement_event_over_mudst"]
    return Comparison(
        quantity="Efficiency gain from 84 MB to 284 MB files",
        source=_source(figure),
        published_low=figure.low,
        published_high=figure.high,
        reproduced=analysis.improvement,
        unit="x",
        tolerance=0.0,
        basis="predicted",
        note=f"ratio of the two efficiencies at {analysis.regime.files_per_mount:.2f} files per mount",
    )


def _observed_rate(observed: ObservedRate, n: float, rate_tolerance: float) -> Comparison:
    figure = observed.figure
    implied = observed.implied_files_per_mount
    needs = "no n up to 1,000 gives it" if implied is None else f"it needs {implied:.1f} files per mount"
    return Comparison(
        quantity=f"Observed rate, {figure.file_size_mib:g} MB files ({figure.drives} drives)",
        source=f"{figure.document} ({figure.section}, observed)",
        published_low=figure.low,
        published_high=figure.high,
        reproduced=observed.at_fit_mb_s,
        unit="MB/s",
        tolerance=rate_tolerance,
        basis="predicted",
        note=(
            f"model at {n:.2f} files per mount; at STAR's 1.2: {observed.at_typical_mb_s:.1f} MB/s; {needs} "
            f"(one per-file cost of {observed.implied_overhead_s:.0f} s against "
            f"{observed.model_overhead_at_fit_s:.0f} s in the published curve's regime)"
        ),
    )
