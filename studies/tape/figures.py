"""The tape study's figures: model curves from the physics, published points drawn over them.

Sizes are plotted in bytes on log axes with decimal-unit tick labels (1 MB = 10^6 bytes); the seed's sizes
(MiB, see studies.tape.published) are converted before they are drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib import colormaps
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from studies.figures import new_figure, save_png
from studies.sources import STAR_2006
from studies.tape.curves import CurvePoint
from studies.tape.published import Star2006Figures
from studies.tape.simulation import AGREEMENT, SimulatedPoint

SIZE_LABEL = "File size (log scale; 1 MB = 10⁶ bytes)"
EFFICIENCY_LABEL = "Efficiency (% of drive time spent streaming)"
PUBLISHED_COLOUR = "#c0392b"
OBSERVED_COLOUR = "#1f4e9c"
PROFILE_COLOURS = {
    "t9940b": "#8c564b",
    "lto3": "#ff7f0e",
    "lto7": "#2ca02c",
    "lto8": "#1f77b4",
    "lto9": "#9467bd",
}
_SMALLEST_DRAWN = 8e5  # bytes: the curves start at 1 MB
_UNITS = ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B"))


def size_text(size_bytes: float) -> str:
    """1e6 -> '1 MB', 2.5e9 -> '2.5 GB'."""
    for factor, unit in _UNITS:
        if size_bytes >= factor:
            return f"{size_bytes / factor:.3g} {unit}"
    return f"{size_bytes:.3g} B"


def _size_axis(axes: Axes) -> None:
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(LogLocator(base=10))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: size_text(value)))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel(SIZE_LABEL)
    axes.grid(True, which="major", alpha=0.3)


def _percent_log_axis(axes: Axes) -> None:
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def _rate_log_axis(axes: Axes) -> None:
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))


def _n_label(n: float) -> str:
    return f"{n:g}" if n == round(n) or n < 2 else f"{n:.2f}"


@dataclass(frozen=True)
class StarCurves:
    """The 9940B curves for the STAR figure, by files per mount."""

    curves: Mapping[float, Sequence[CurvePoint]]
    fitted_n: float
    typical_n: float
    drives: int


_N_COLOURS = ("#4b0082", "#7b68ee", "#1f77b4", "#17becf", "#2ca02c", "#bcbd22", "#ff7f0e", "#8c564b")


def _curve_style(n: float, fitted_n: float, typical_n: float, index: int) -> dict[str, object]:
    if n == fitted_n:
        return {
            "color": "black",
            "linewidth": 2.6,
            "label": f"n = {_n_label(n)} (fitted to the published points)",
        }
    label = f"n = {_n_label(n)}" + (" (STAR's usual)" if n == typical_n else "")
    return {
        "color": _N_COLOURS[index % len(_N_COLOURS)],
        "linewidth": 1.5,
        "linestyle": "--" if n == typical_n else "-",
        "label": label,
    }


def star_efficiency_figure(curves: StarCurves, figures: Star2006Figures, path: Path) -> Path:
    """9940B efficiency and nine-drive rate against file size, per files per mount, with seed 003's points."""
    figure = new_figure(13.0, 6.4)
    efficiency_axes, rate_axes = figure.subplots(1, 2)
    ordered = sorted(curves.curves)
    for index, n in enumerate(ordered):
        points = curves.curves[n]
        style = _curve_style(n, curves.fitted_n, curves.typical_n, index)
        sizes = [point.size_bytes for point in points]
        efficiency_axes.plot(sizes, [100 * point.efficiency for point in points], **style)
        rate_axes.plot(
            sizes,
            [curves.drives * point.rate_per_drive_mb_s for point in points],
            **style,
        )
    # The curves share one legend under the panels; each panel's legend names its published points.
    handles, labels = efficiency_axes.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=9)
    published_efficiency = _published_efficiencies(efficiency_axes, figures)
    published_rates = _published_rates(rate_axes, figures)
    efficiency_axes.legend(handles=published_efficiency, loc="upper left", fontsize=8)
    rate_axes.legend(handles=published_rates, loc="lower right", fontsize=8)
    for axes in (efficiency_axes, rate_axes):
        _size_axis(axes)
        axes.set_xlim(_SMALLEST_DRAWN, 1.3e10)
    _percent_log_axis(efficiency_axes)
    efficiency_axes.set_ylim(0.05, 100)
    efficiency_axes.set_ylabel(EFFICIENCY_LABEL)
    efficiency_axes.set_title("One 30 MB/s 9940B drive, n files per mount")
    _rate_log_axis(rate_axes)
    rate_axes.set_ylim(0.1, 300)
    rate_axes.set_ylabel(f"Aggregate rate of {curves.drives} busy drives (MB/s)")
    rate_axes.set_title(f"STAR's {curves.drives} drives (N·R·efficiency)")
    return save_png(figure, path)


def _published_efficiencies(axes: Axes, figures: Star2006Figures) -> list[Artist | tuple[Artist, ...]]:
    mudst, event, small = (
        figures["efficiency_mudst"],
        figures["efficiency_event"],
        figures["efficiency_small"],
    )
    region = axes.fill_between(
        [_SMALLEST_DRAWN, small.file_size_bytes],
        small.low if small.low > 0 else 0.05,
        small.high,
        color=PUBLISHED_COLOUR,
        alpha=0.15,
        label=f"published: under {small.high:g} % below {small.file_size_mib:g} MB",
    )
    points = axes.errorbar(
        [mudst.file_size_bytes, event.file_size_bytes],
        [mudst.midpoint, event.midpoint],
        yerr=[[0, event.midpoint - event.low], [0, event.high - event.midpoint]],
        fmt="D",
        color=PUBLISHED_COLOUR,
        markersize=6,
        capsize=6,
        elinewidth=2,
        zorder=5,
        label=f"published ({STAR_2006.short}): {mudst.low:g} % at {mudst.file_size_mib:g} MB, "
        f"{event.low:g}-{event.high:g} % at {event.file_size_mib:g} MB",
    )
    return [points, region]


def _published_rates(axes: Axes, figures: Star2006Figures) -> list[Artist | tuple[Artist, ...]]:
    small, best = figures["rate_small_files"], figures["rate_best_hour"]
    region = axes.fill_between(
        [_SMALLEST_DRAWN, small.file_size_bytes],
        0.1,
        small.high,
        color=PUBLISHED_COLOUR,
        alpha=0.15,
        label=f"published: at most {small.high:g} MB/s below {small.file_size_mib:g} MB",
    )
    (best_point,) = axes.plot(
        [best.file_size_bytes],
        [best.midpoint],
        "D",
        color=PUBLISHED_COLOUR,
        markersize=8,
        zorder=5,
        label=f"published: {best.midpoint:g} MB/s at best ({best.file_size_mib:g} MB)",
    )
    observed = [figures["observed_rate_mudst"], figures["observed_rate_event"]]
    (observed_points,) = axes.plot(
        [figure.file_size_bytes for figure in observed],
        [figure.midpoint for figure in observed],
        "s",
        color=OBSERVED_COLOUR,
        markersize=9,
        zorder=5,
        label="observed at STAR, Oct 2006: "
        + ", ".join(f"{figure.midpoint:g} MB/s ({figure.file_size_mib:g} MB)" for figure in observed),
    )
    return [best_point, observed_points, region]


def profiles_figure(
    curves: Mapping[tuple[str, float], Sequence[CurvePoint]], files_per_mount: Sequence[float], path: Path
) -> Path:
    """Every profile: efficiency (top) and delivered rate per drive (bottom) against size, a column per n."""
    figure = new_figure(15.0, 8.5)
    grid = figure.subplots(2, len(files_per_mount), sharex=True, squeeze=False)
    profiles = sorted({profile for profile, _ in curves}, key=list(PROFILE_COLOURS).index)
    for column, n in enumerate(files_per_mount):
        top, bottom = grid[0][column], grid[1][column]
        for profile in profiles:
            points = curves.get((profile, n), ())
            sizes = [point.size_bytes for point in points]
            colour = PROFILE_COLOURS[profile]
            top.plot(sizes, [100 * point.efficiency for point in points], color=colour, label=profile)
            bottom.plot(sizes, [point.rate_per_drive_mb_s for point in points], color=colour, label=profile)
        top.set_title(f"{_n_label(n)} file{'s' if n != 1 else ''} per mount")
        top.set_ylim(0, 100)
        top.set_ylabel(EFFICIENCY_LABEL)
        _rate_log_axis(bottom)
        bottom.set_ylabel("Delivered rate per drive (MB/s)")
        for axes in (top, bottom):
            _size_axis(axes)
        top.set_xlabel("")
        top.legend(loc="upper left", fontsize=8)
    return save_png(figure, path)


def files_per_mount_figure(
    curves: Mapping[tuple[str, int], Sequence[CurvePoint]], sizes: Sequence[int], path: Path
) -> Path:
    """Every profile: efficiency against files per mount, one panel per file size."""
    figure = new_figure(15.0, 4.8)
    panels = figure.subplots(1, len(sizes), sharey=True, squeeze=False)[0]
    profiles = sorted({profile for profile, _ in curves}, key=list(PROFILE_COLOURS).index)
    for axes, size in zip(panels, sizes, strict=True):
        for profile in profiles:
            points = curves.get((profile, size), ())
            axes.plot(
                [point.files_per_mount for point in points],
                [100 * point.efficiency for point in points],
                "o-",
                markersize=3,
                color=PROFILE_COLOURS[profile],
                label=profile,
            )
        axes.set_xscale("log")
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.set_xlabel("Files read per mount (log scale)")
        axes.set_title(f"{size_text(size)} files")
        axes.set_ylim(0, 100)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="upper left", fontsize=8)
    panels[0].set_ylabel(EFFICIENCY_LABEL)
    return save_png(figure, path)


@dataclass(frozen=True)
class FileTypeBars:
    """Efficiency per STAR file type for a few (profile, files per mount) series."""

    names: Sequence[str]  # file types, largest first
    sizes: Sequence[int]
    series: Mapping[str, Sequence[float]]  # label -> efficiency per type (0..1)


def file_types_figure(bars: FileTypeBars, figures: Star2006Figures, path: Path) -> Path:
    figure = new_figure(11.0, 9.0)
    axes = figure.subplots()
    count = len(bars.series)
    height = 0.8 / count
    rows = range(len(bars.names))
    colours = ["#8c564b", "#d9a384", "#ff7f0e", "#9467bd", "#2ca02c"]
    for index, (label, values) in enumerate(bars.series.items()):
        offsets = [row - 0.4 + height * (index + 0.5) for row in rows]
        axes.barh(
            offsets, [100 * value for value in values], height=height, label=label, color=colours[index]
        )
    axes.set_yticks(
        list(rows), [f"{name} ({size_text(size)})" for name, size in zip(bars.names, bars.sizes, strict=True)]
    )
    axes.invert_yaxis()
    _published_on_types(axes, bars, figures)
    axes.set_xlabel(EFFICIENCY_LABEL)
    axes.set_ylabel("STAR file type (2006 average size)")
    axes.set_title("Expected efficiency of STAR's file types")
    axes.grid(True, axis="x", alpha=0.3)
    axes.legend(loc="lower right", fontsize=9)
    return save_png(figure, path)


def _published_on_types(axes: Axes, bars: FileTypeBars, figures: Star2006Figures) -> None:
    """The published efficiencies, on the row of the type whose average the seed quotes."""
    marks = {"daq_reco_MuDst": figures["efficiency_mudst"], "daq_reco_event": figures["efficiency_event"]}
    first = True
    for name, figure in marks.items():
        if name not in bars.names:
            continue
        row = list(bars.names).index(name)
        axes.errorbar(
            [figure.midpoint],
            [row],
            xerr=[[figure.midpoint - figure.low], [figure.high - figure.midpoint]],
            fmt="D",
            color=PUBLISHED_COLOUR,
            capsize=5,
            markersize=8,
            zorder=5,
            label=f"published, {STAR_2006.short} (8 % quoted for 84 MB MicroDSTs)" if first else None,
        )
        first = False


def half_efficiency_figure(
    curves: Mapping[float, Sequence[CurvePoint]],
    crossings: Mapping[float, int | None],
    profile: str,
    path: Path,
) -> Path:
    figure = new_figure(10.0, 6.0)
    axes = figure.subplots()
    ordered = sorted(curves)
    for index, n in enumerate(ordered):
        points = curves[n]
        colour = colormaps["plasma"](0.1 + 0.7 * index / max(1, len(ordered) - 1))
        crossing = crossings.get(n)
        where = f": 50 % at {size_text(crossing)}" if crossing is not None else ": never 50 %"
        axes.plot(
            [point.size_bytes for point in points],
            [100 * point.efficiency for point in points],
            color=colour,
            label=f"{_n_label(n)} file{'s' if n != 1 else ''} per mount{where}",
        )
        if crossing is not None:
            axes.plot([crossing], [50], "o", color=colour, markersize=8, zorder=5)
    axes.axhline(50, color="grey", linestyle=":", label="half the drive time lost")
    _size_axis(axes)
    axes.set_ylim(0, 100)
    axes.set_ylabel(EFFICIENCY_LABEL)
    axes.set_title(f"{profile}: the file size below which a drive loses half its time")
    axes.legend(loc="upper left", fontsize=9)
    return save_png(figure, path)


def cross_check_figure(points: Sequence[SimulatedPoint], path: Path) -> Path:
    """Left: simulated against analytic efficiency; right: their relative difference per point."""
    figure = new_figure(14.0, 6.0)
    scatter, differences = figure.subplots(1, 2, width_ratios=(1, 1.2))
    analytic = [100 * point.analytic for point in points]
    low, high = min(analytic) / 1.6, max(analytic) * 1.6
    scatter.plot([low, high], [low, high], color="black", linewidth=1, label="simulated = analytic")
    scatter.fill_between(
        [low, high],
        [low * (1 - AGREEMENT), high * (1 - AGREEMENT)],
        [low * (1 + AGREEMENT), high * (1 + AGREEMENT)],
        color="grey",
        alpha=0.25,
        label=f"±{100 * AGREEMENT:g} %",
    )
    shown: set[str] = set()
    for point in points:
        scatter.plot(
            [100 * point.analytic],
            [100 * point.simulated],
            "o",
            color=PROFILE_COLOURS.get(point.profile, "black"),
            markersize=7,
            label=None if point.profile in shown else point.profile,
        )
        shown.add(point.profile)
    for set_scale in (scatter.set_xscale, scatter.set_yscale):
        set_scale("log")
    for axis in (scatter.xaxis, scatter.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    scatter.set_xlim(low, high)
    scatter.set_ylim(low, high)
    scatter.set_xlabel("Analytic efficiency (%)")
    scatter.set_ylabel("Discrete-event library efficiency (%)")
    scatter.set_title("The formula against the simulated library")
    scatter.grid(True, alpha=0.3)
    scatter.legend(loc="upper left", fontsize=9)

    rows = range(len(points))
    differences.axvspan(
        -100 * AGREEMENT, 100 * AGREEMENT, color="grey", alpha=0.2, label=f"±{100 * AGREEMENT:g} %"
    )
    differences.axvline(0, color="black", linewidth=1)
    differences.scatter(
        [100 * point.relative_difference for point in points],
        list(rows),
        c=[PROFILE_COLOURS.get(point.profile, "black") for point in points],
        s=50,
        zorder=5,
    )
    differences.set_yticks(
        list(rows),
        [
            f"{point.profile}, {size_text(point.size_bytes)}, n = {_n_label(point.files_per_mount)}"
            + (f", {point.drives} drives" if point.drives > 1 else "")
            for point in points
        ],
    )
    differences.invert_yaxis()
    differences.set_xlim(-1.6 * 100 * AGREEMENT, 1.6 * 100 * AGREEMENT)
    differences.set_xlabel("Simulated minus analytic, relative to analytic (%)")
    differences.set_title("Relative difference per point")
    differences.grid(True, axis="x", alpha=0.3)
    differences.legend(loc="lower right", fontsize=9)
    return save_png(figure, path)
