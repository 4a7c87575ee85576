"""A figure (PNG) per report, drawn by matplotlib's Agg canvas on a Figure of its own: no pyplot, no global
state, so figures may be drawn from several threads of the service at once. Every axis names its unit."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import matplotlib.dates as mdates
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from carousel.reports.table import Report, Value

SIZE_IN = (10.0, 4.6)
DPI = 100
MB = 1e6
GB = 1e9
COLOURS = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#718096", "#b7791f")
READING, POSITIONING, TRANSFER, IDLE = "#2b6cb0", "#90cdf4", "#2b6cb0", "#e2e8f0"
MOST_TAPES = 20
# Room for one time label ("Nov-25", "21:00") and a gap at the tick labels' size: an axes gets no more time
# ticks than its width holds, so that labels of side-by-side charts never run into each other.
TIME_LABEL_IN = 0.7


def drawn(report: Report) -> Figure:
    """The report's figure, on an Agg canvas of its own."""
    figure = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    DRAW[report.kind](figure, report)
    figure.suptitle(f"{report.title} — {_span(report)}", fontsize=11)
    return figure


def png(report: Report) -> bytes:
    """The report's figure as PNG bytes."""
    out = io.BytesIO()
    drawn(report).savefig(out, format="png")
    return out.getvalue()


def _span(report: Report) -> str:
    window = report.window
    return f"{window.since:%Y-%m-%d %H:%M} to {window.until:%Y-%m-%d %H:%M} UTC"


def _floats(values: Sequence[Value], scale: float = 1.0) -> list[float]:
    return [float(cast(float, v)) / scale if isinstance(v, int | float) else 0.0 for v in values]


def _day(when: Value) -> float:
    """A time as matplotlib's date number: days since its epoch, 1970-01-01 UTC."""
    return cast(datetime, when).timestamp() / 86_400


def _days(values: Sequence[Value]) -> list[float]:
    return [_day(v) for v in values]


def _times(report: Report) -> tuple[list[float], list[float]]:
    """Bucket starts as date numbers, and bucket widths in days."""
    starts, ends = _days(report.column("start")), _days(report.column("end"))
    return starts, [e - s for s, e in zip(starts, ends, strict=True)]


def _time_axis(axes: Axes, report: Report) -> None:
    axes.set_xlim(_day(report.window.since), _day(report.window.until))
    dates = cast(Any, mdates)  # matplotlib.dates has no annotations
    width_in = axes.get_position().width * SIZE_IN[0]  # every figure is SIZE_IN
    locator = dates.AutoDateLocator(tz=UTC, maxticks=max(3, int(width_in / TIME_LABEL_IN) + 1))
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator, tz=UTC))
    axes.set_xlabel("time (UTC)")


def _empty(axes: Axes, what: str) -> None:
    axes.text(0.5, 0.5, f"no {what} in this window", ha="center", va="center", transform=axes.transAxes)
    axes.set_yticks([])


def _style(axes: Axes) -> None:
    axes.grid(axis="y", color="#e2e8f0", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def _library(figure: Figure, report: Report) -> None:
    rate_axes, time_axes = figure.subplots(1, 2)
    starts, widths = _times(report)
    mb_s = _floats(report.column("bytes_per_s"), MB)
    rate_axes.bar(
        starts, mb_s, width=widths, align="edge", color=COLOURS[0], edgecolor="white", linewidth=0.5
    )
    rate_axes.set_ylabel("read throughput (MB/s)")
    rate_axes.set_title("bytes read per second", fontsize=10)
    _time_axis(rate_axes, report)
    _style(rate_axes)
    _drive_time(time_axes, report, starts, widths)


def _drive_time(axes: Axes, report: Report, starts: list[float], widths: list[float]) -> None:
    """Stacked drive hours per bucket (transfer and positioning when estimated, else reading; then idle
    while mounted), and the drive efficiency on a second axis."""
    transfer = _floats(report.column("transfer_s"), 3600)
    positioning = _floats(report.column("positioning_s"), 3600)
    reading = _floats(report.column("reading_s"), 3600)
    idle = [max(v, 0.0) for v in _floats(report.column("idle_mounted_s"), 3600)]
    estimated = any(v is not None for v in report.column("transfer_s"))
    bar: dict[str, Any] = {"width": widths, "align": "edge", "edgecolor": "white", "linewidth": 0.5}
    if estimated:
        axes.bar(starts, transfer, color=TRANSFER, label="transfer (est.)", **bar)
        axes.bar(starts, positioning, bottom=transfer, color=POSITIONING, label="positioning (est.)", **bar)
    else:
        axes.bar(starts, reading, color=READING, label="reading", **bar)
    axes.bar(starts, idle, bottom=reading, color=IDLE, label="mounted, not reading", **bar)
    axes.set_ylabel("drive time (hours, all drives)")
    axes.set_title("drive time and efficiency", fontsize=10)
    _time_axis(axes, report)
    _style(axes)
    efficiency = report.column("efficiency")
    ratio = axes.twinx()
    points = [
        (s, 100 * float(cast(float, e)))
        for s, e, w in zip(starts, efficiency, widths, strict=True)
        if e is not None
    ]
    mids = {s: s + w / 2 for s, w in zip(starts, widths, strict=True)}
    if points:
        ratio.plot(
            [mids[s] for s, _ in points],
            [p for _, p in points],
            color=COLOURS[1],
            marker="o",
            markersize=3,
            label="efficiency",
        )
    ratio.set_ylim(0, 105)
    ratio.set_ylabel("drive efficiency (%)")
    ratio.spines["top"].set_visible(False)
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = ratio.get_legend_handles_labels()
    axes.legend(
        handles + more_handles,
        labels + more_labels,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncols=4,
        frameon=False,
    )


def _keyed(
    records: list[dict[str, Value]], key: str, value: str, scale: float
) -> dict[str, list[tuple[float, float]]]:
    """Per key, (bucket start as a date number, value / scale) points."""
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in records:
        series[str(row[key])].append((_day(row["start"]), _floats([row[value]], scale)[0]))
    return series


def _library_names(records: list[dict[str, Value]], key: str) -> list[dict[str, Value]]:
    """The records with `key` named `library/key` when they hold several libraries (the same tape ID or drive
    name in two libraries is two), as they are otherwise."""
    if len({row["library"] for row in records}) <= 1:
        return records
    return [{**row, key: f"{row['library']}/{row[key] or '?'}"} for row in records]  # '?': a drive unnamed


def _drives(figure: Figure, report: Report) -> None:
    rate_axes, efficiency_axes = figure.subplots(1, 2, width_ratios=(3, 2))
    records = _library_names(report.records(), "drive")
    series = _keyed(records, "drive", "bytes_per_s", MB)
    if not series:
        _empty(rate_axes, "reads")
        _empty(efficiency_axes, "mounts")
        return
    edges = [_day(report.window.since), *(_day(end) for _, end in report.window.bucket_bounds())]
    for n, (drive, points) in enumerate(sorted(series.items())):
        by_start = dict(points)
        values = [by_start.get(start, 0.0) for start in edges[:-1]]
        rate_axes.stairs(values, edges, color=COLOURS[n % len(COLOURS)], label=drive or "?", linewidth=1.5)
    rate_axes.set_ylabel("read throughput (MB/s)")
    rate_axes.set_title("per drive", fontsize=10)
    _time_axis(rate_axes, report)
    _style(rate_axes)
    rate_axes.legend(fontsize=7, ncols=2, frameon=False)
    reading: dict[str, float] = defaultdict(float)
    mounted: dict[str, float] = defaultdict(float)
    for row in records:
        reading[str(row["drive"])] += _floats([row["reading_s"]])[0]
        mounted[str(row["drive"])] += _floats([row["mounted_s"]])[0]
    drives = sorted(mounted)
    values = [100 * reading[d] / mounted[d] if mounted[d] > 0 else 0.0 for d in drives]
    efficiency_axes.barh([d or "?" for d in drives], values, color=COLOURS[0])
    efficiency_axes.set_xlim(0, 100)
    efficiency_axes.set_xlabel("drive efficiency over the window (%)")
    efficiency_axes.set_title("reading time / mounted time", fontsize=10)
    efficiency_axes.invert_yaxis()
    _style(efficiency_axes)


def _tapes(figure: Figure, report: Report) -> None:
    axes = figure.subplots()
    mounts: dict[str, int] = defaultdict(int)
    files: dict[str, int] = defaultdict(int)
    for row in _library_names(report.records(), "tape"):
        tape = str(row["tape"])
        mounts[tape] += int(cast(int, row["mounts"]))
        files[tape] += int(cast(int, row["files"]))
    busiest = sorted(mounts, key=lambda t: (-mounts[t], t))[:MOST_TAPES]
    busiest = [t for t in busiest if mounts[t] > 0]
    if not busiest:
        _empty(axes, "mounts")
        return
    axes.bar(busiest, [mounts[t] for t in busiest], color=COLOURS[0], label="mounts")
    axes.set_ylabel("mounts in the window (count)")
    axes.set_xlabel(f"tape (the {len(busiest)} most mounted)")
    axes.tick_params(axis="x", labelrotation=60, labelsize=7)
    _style(axes)
    per_mount = axes.twinx()
    per_mount.plot(
        busiest, [files[t] / mounts[t] for t in busiest], "o", color=COLOURS[1], label="files per mount"
    )
    per_mount.set_ylabel("files staged per mount (count)")
    per_mount.set_ylim(bottom=0)
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = per_mount.get_legend_handles_labels()
    axes.legend(handles + more_handles, labels + more_labels, fontsize=8, frameon=False)


def _groups(figure: Figure, report: Report) -> None:
    axes = figure.subplots()
    series = _keyed(report.records(), "group", "bytes", GB)
    if not series:
        _empty(axes, "reads")
        return
    bounds = sorted(
        set(zip(report.column("start"), report.column("end"), strict=True)),
        key=lambda b: cast(datetime, b[0]),
    )
    starts = [_day(s) for s, _ in bounds]
    widths = [_day(e) - _day(s) for s, e in bounds]
    bottom = [0.0] * len(starts)
    for n, (group, points) in enumerate(sorted(series.items())):
        by_start = dict(points)
        values = [by_start.get(s, 0.0) for s in starts]
        axes.bar(
            starts,
            values,
            width=widths,
            bottom=bottom,
            align="edge",
            color=COLOURS[n % len(COLOURS)],
            label=group,
            edgecolor="white",
            linewidth=0.5,
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    axes.set_ylabel("data read (GB per bucket)")
    _time_axis(axes, report)
    _style(axes)
    axes.legend(title="group", fontsize=8, frameon=False)


def _mounts(figure: Figure, report: Report) -> None:
    files_axes, efficiency_axes = figure.subplots(1, 2)
    files = _floats(report.column("files"))
    if not files:
        _empty(files_axes, "mounts")
        _empty(efficiency_axes, "mounts")
        return
    files_axes.hist(files, bins=min(30, max(5, len(files) // 4)), color=COLOURS[0])
    files_axes.set_xlabel("files staged per mount (count)")
    files_axes.set_ylabel("mounts (count)")
    _style(files_axes)
    mounted_min = _floats(report.column("mounted_s"), 60)
    efficiency = [100 * v for v in _floats(report.column("efficiency"))]
    efficiency_axes.scatter(
        files, efficiency, s=[max(4.0, m / 2) for m in mounted_min], color=COLOURS[0], alpha=0.6
    )
    efficiency_axes.set_xlabel("files staged per mount (count)")
    efficiency_axes.set_ylabel("mount efficiency: reading / mounted (%)")
    efficiency_axes.set_ylim(0, 105)
    efficiency_axes.set_title("marker area: minutes mounted", fontsize=9)
    _style(efficiency_axes)


def _remounts(figure: Figure, report: Report) -> None:
    axes = figure.subplots()
    starts, widths = _times(report)
    mounts = _floats(report.column("mounts"))
    remounts = _floats(report.column("remounts"))
    bar: dict[str, Any] = {"width": widths, "align": "edge", "edgecolor": "white", "linewidth": 0.5}
    axes.bar(
        starts,
        [m - r for m, r in zip(mounts, remounts, strict=True)],
        color=COLOURS[0],
        label="first mount of a tape",
        **bar,
    )
    axes.bar(
        starts,
        remounts,
        bottom=[m - r for m, r in zip(mounts, remounts, strict=True)],
        color=COLOURS[1],
        label="remount",
        **bar,
    )
    axes.set_ylabel("mounts per bucket (count)")
    _time_axis(axes, report)
    _style(axes)
    axes.legend(fontsize=8, frameon=False)


def _duration_unit(longest_s: float) -> tuple[float, str]:
    if longest_s >= 2 * 3600:
        return 3600.0, "hours"
    return (60.0, "minutes") if longest_s >= 120 else (1.0, "seconds")


def _queue_age(figure: Figure, report: Report) -> None:
    axes = figure.subplots()
    rows = [r for r in report.records() if r["group"] == "*"]
    ends = [_day(r["end"]) for r in rows]
    scale, unit = _duration_unit(max(_floats([r["age_max_s"] for r in rows]), default=0.0))
    lines = (("age_p50_s", "median", COLOURS[0]), ("age_p90_s", "90th percentile", COLOURS[1]))
    for name, label, colour in (*lines, ("age_max_s", "oldest", COLOURS[3])):
        values = [_floats([r[name]], scale)[0] for r in rows]
        axes.plot(ends, values, marker="o", markersize=3, color=colour, label=f"age: {label}")
    axes.set_ylabel(f"age of waiting files ({unit})")
    axes.set_ylim(bottom=0)
    _time_axis(axes, report)
    _style(axes)
    waiting = axes.twinx()
    counts = _floats([r["waiting"] for r in rows])
    waiting.plot(ends, counts, linestyle="--", color=COLOURS[6], label="files waiting")
    waiting.set_ylabel("files waiting (count)")
    waiting.set_ylim(bottom=0)
    handles, labels = axes.get_legend_handles_labels()
    more_handles, more_labels = waiting.get_legend_handles_labels()
    axes.legend(
        handles + more_handles,
        labels + more_labels,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncols=4,
        frameon=False,
    )
    axes.set_title("at each bucket's end", fontsize=10)


DRAW: dict[str, Callable[[Figure, Report], None]] = {
    "library": _library,
    "drives": _drives,
    "tapes": _tapes,
    "groups": _groups,
    "mounts": _mounts,
    "remounts": _remounts,
    "queue-age": _queue_age,
}
