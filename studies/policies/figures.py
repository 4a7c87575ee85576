"""The policy study's figures: the policies side by side, the depth and drive sweeps, the grouping gain;
STAR's published figures (seed 003) drawn over the simulated ones."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from studies.figures import new_figure, save_png
from studies.policies.analysis import DEPTH_WORKLOADS, DRIVE_WORKLOAD, GROUPING_WORKLOADS, PolicyAnalysis
from studies.policies.runs import POLICIES, STAR_BATCH, STAR_DEPTH, STAR_RAW_DEPTH, RunRow
from studies.sources import STAR_2006

POLICY_COLOURS = {"fifo": "#7f7f7f", "star2006": "#d62728", "cta": "#1f77b4", "carousel": "#2ca02c"}
PUBLISHED_COLOUR = "#c0392b"
BOUND_COLOUR = "#222222"
STAR_DEPTH_BAND = 10.0  # %: seed 003's "within 10 %"
STAR_GROUPING_GAIN = 20.0  # %: seed 003's improvement from grouping by tape


_PLAIN = FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}")


def _plain_log(axes: Axes) -> None:
    """A log y axis labelled 0.1, 0.2, 0.5, 1, 2, 5, ... in plain numbers."""
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(_PLAIN)
    axes.yaxis.set_minor_formatter(NullFormatter())


def _integer_log_x(axes: Axes, values: Sequence[int]) -> None:
    axes.set_xscale("log")
    axes.xaxis.set_major_locator(FixedLocator(list(values)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_locator(NullLocator())


def _bars(axes: Axes, rows: Sequence[RunRow], values: Sequence[float], text: str) -> None:
    positions = range(len(rows))
    axes.bar(positions, values, color=[POLICY_COLOURS[r.policy] for r in rows])
    axes.set_xticks(list(positions), [r.policy for r in rows])
    for position, value in zip(positions, values, strict=True):
        axes.annotate(
            text.format(value),
            (position, value),
            textcoords="offset points",
            xytext=(0, 2),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    axes.margins(y=0.18)
    axes.grid(True, axis="y", alpha=0.3)


def side_by_side_figure(analysis: PolicyAnalysis, path: Path) -> Path:
    names = list(analysis.workloads)
    figure = new_figure(15.0, 3.6 * len(names))
    grid = figure.subplots(len(names), 4, squeeze=False)
    for row_axes, name in zip(grid, names, strict=True):
        rows = analysis.side_by_side(name)
        throughput, files, latency, bound = row_axes
        _bars(throughput, rows, [r.throughput_mb_s for r in rows], "{:.1f}")
        throughput.axhline(rows[0].bound_throughput_mb_s, color=BOUND_COLOUR, linestyle="--", linewidth=1)
        throughput.set_ylim(0, 1.2 * max(rows[0].bound_throughput_mb_s, *(r.throughput_mb_s for r in rows)))
        throughput.set_ylabel("Throughput (MB/s)")
        throughput.set_title(f"{name}: throughput (dashed: physical bound)", fontsize=10)
        _bars(files, rows, [r.files_per_mount for r in rows], "{:.3g}")
        _plain_log(files)
        files.set_ylim(0.8, 3.0 * max(r.files_per_mount for r in rows))
        files.set_ylabel("Files per mount (log scale)")
        files.set_title(f"{name}: files per mount", fontsize=10)
        width = 0.26
        for offset, (label, key, shade) in enumerate(
            (("p50", "latency_p50_s", 1.0), ("p95", "latency_p95_s", 0.65), ("p99", "latency_p99_s", 0.35))
        ):
            latency.bar(
                [i + (offset - 1) * width for i in range(len(rows))],
                [getattr(r, key) / 3600.0 for r in rows],
                width,
                color=[POLICY_COLOURS[r.policy] for r in rows],
                alpha=shade,
                label=label,
            )
        latency.set_xticks(list(range(len(rows))), [r.policy for r in rows])
        _plain_log(latency)
        latency.set_ylabel("Latency (hours, log scale)")
        latency.set_title(f"{name}: latency p50 / p95 / p99", fontsize=10)
        latency.legend(fontsize=8, title="bars, left to right", title_fontsize=8)
        latency.grid(True, axis="y", alpha=0.3)
        _bars(bound, rows, [r.makespan_over_bound for r in rows], "{:.2f}×")
        bound.axhline(1.0, color=BOUND_COLOUR, linestyle="--", linewidth=1)
        bound.set_ylabel("Makespan / physical bound")
        bound.set_title(f"{name}: makespan against the bound", fontsize=10)
    return save_png(figure, path)


def _star_depths(axes: Axes) -> None:
    for depth, label in ((STAR_DEPTH, "STAR DST depth"), (STAR_RAW_DEPTH, "STAR Raw depth")):
        axes.axvline(depth, color=PUBLISHED_COLOUR, linestyle=":", linewidth=1)
        axes.annotate(
            label,
            (depth, 0.98),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=7,
            color=PUBLISHED_COLOUR,
            ha="right",
            va="top",
        )


def depth_figure(analysis: PolicyAnalysis, path: Path) -> Path:
    depths = list(analysis.settings.depths)
    figure = new_figure(12.0, 4.0 * len(DEPTH_WORKLOADS))
    grid = figure.subplots(len(DEPTH_WORKLOADS), 2, squeeze=False)
    for (throughput, latency), name in zip(grid, DEPTH_WORKLOADS, strict=True):
        sweep = analysis.depth_sweep(name)
        base = next(r for r in sweep if r.depth == STAR_DEPTH)
        low, high = (
            (1 - STAR_DEPTH_BAND / 100) * base.throughput_mb_s,
            (1 + STAR_DEPTH_BAND / 100) * (base.throughput_mb_s),
        )
        throughput.axhspan(
            low,
            high,
            color=PUBLISHED_COLOUR,
            alpha=0.15,
            label=f"STAR: within 10 % of depth 30 ({STAR_2006.short})",
        )
        throughput.plot(
            [r.depth for r in sweep],
            [r.throughput_mb_s for r in sweep],
            marker="o",
            color=POLICY_COLOURS["star2006"],
            label="star2006, simulated",
        )
        throughput.plot(
            [min(depths), max(depths)],
            [base.bound_throughput_mb_s] * 2,
            color=BOUND_COLOUR,
            linestyle="--",
            linewidth=1,
            label="physical bound",
        )
        _star_depths(throughput)
        _integer_log_x(throughput, depths)
        throughput.set_ylim(0, 1.6 * max(base.bound_throughput_mb_s, *(r.throughput_mb_s for r in sweep)))
        throughput.set_xlabel("HSM-side queue depth (files, log scale)")
        throughput.set_ylabel("Throughput (MB/s)")
        throughput.set_title(f"{name}: throughput against depth", fontsize=10)
        throughput.legend(fontsize=8, loc="lower right")
        throughput.grid(True, alpha=0.3)
        for key, label, style in (
            ("latency_p50_s", "p50", "-"),
            ("latency_p95_s", "p95", "--"),
            ("latency_p99_s", "p99", ":"),
        ):
            latency.plot(
                [r.depth for r in sweep],
                [getattr(r, key) / 3600.0 for r in sweep],
                marker="o",
                linestyle=style,
                color=POLICY_COLOURS["star2006"],
                label=f"latency {label}",
            )
        _star_depths(latency)
        _integer_log_x(latency, depths)
        latency.set_ylim(0, 1.15 * max(r.latency_p99_s / 3600.0 for r in sweep))
        latency.set_xlabel("HSM-side queue depth (files, log scale)")
        latency.set_ylabel("Latency (hours)")
        latency.set_title(f"{name}: latency against depth", fontsize=10)
        latency.legend(fontsize=8, loc="lower left")
        latency.grid(True, alpha=0.3)
    return save_png(figure, path)


def drives_figure(analysis: PolicyAnalysis, path: Path) -> Path:
    counts = list(analysis.settings.drive_counts)
    figure = new_figure(12.0, 4.2)
    throughput, latency = figure.subplots(1, 2)
    bound = analysis.drive_sweep(POLICIES[0])
    throughput.plot(
        counts,
        [r.bound_throughput_mb_s for r in bound],
        color=BOUND_COLOUR,
        linestyle="--",
        label="physical bound",
    )
    for policy in POLICIES:
        sweep = analysis.drive_sweep(policy)
        colour = POLICY_COLOURS[policy]
        throughput.plot(counts, [r.throughput_mb_s for r in sweep], marker="o", color=colour, label=policy)
        latency.plot(
            counts, [r.latency_p50_s / 3600.0 for r in sweep], marker="o", color=colour, label=policy
        )
    for axes in (throughput, latency):
        _integer_log_x(axes, counts)
        axes.set_xlabel("Drives (log scale)")
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8)
    throughput.set_ylabel("Throughput (MB/s)")
    throughput.set_title(f"{DRIVE_WORKLOAD}: throughput against drives", fontsize=10)
    _plain_log(latency)
    latency.set_ylabel("Median latency (hours, log scale)")
    latency.set_title(f"{DRIVE_WORKLOAD}: median latency against drives", fontsize=10)
    return save_png(figure, path)


def grouping_figure(analysis: PolicyAnalysis, path: Path) -> Path:
    gains = [analysis.grouping_gain(name) for name in GROUPING_WORKLOADS]
    figure = new_figure(12.0, 4.2)
    throughput, gain_axes = figure.subplots(1, 2)
    width = 0.38
    positions = list(range(len(gains)))
    for offset, (label, rows, colour) in enumerate(
        (
            ("without grouping (fifo)", [g.without for g in gains], POLICY_COLOURS["fifo"]),
            ("grouped by tape (star2006)", [g.grouped for g in gains], POLICY_COLOURS["star2006"]),
        )
    ):
        places = [p + (offset - 0.5) * width for p in positions]
        throughput.bar(places, [r.throughput_mb_s for r in rows], width, color=colour, label=label)
        for place, row in zip(places, rows, strict=True):
            throughput.annotate(
                f"{row.throughput_mb_s:.1f} MB/s\n{row.files_per_mount:.3g} files/mount",
                (place, row.throughput_mb_s),
                textcoords="offset points",
                xytext=(0, 2),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    throughput.set_xticks(positions, [g.workload for g in gains])
    throughput.set_ylabel("Throughput (MB/s)")
    throughput.set_title("STAR's configuration with and without grouping by tape", fontsize=10)
    throughput.margins(y=0.25)
    throughput.legend(fontsize=8, loc="upper left")
    throughput.grid(True, axis="y", alpha=0.3)
    by_share = analysis.grouping_by_share()
    batch = analysis.grouping_gain(STAR_BATCH)
    shares = [100.0 * share for share, _ in by_share]
    values = [gain.gain_percent for _, gain in by_share]
    gain_axes.plot(
        shares,
        values,
        marker="o",
        color=POLICY_COLOURS["star2006"],
        label="STAR stream with a share in bulk restores, simulated",
    )
    gain_axes.plot(
        [100.0],
        [batch.gain_percent],
        marker="s",
        linestyle="none",
        color=POLICY_COLOURS["star2006"],
        label="STAR batch (all submitted at once), simulated",
    )
    for share, value in (*zip(shares, values, strict=True), (100.0, batch.gain_percent)):
        gain_axes.annotate(
            f"{value:+.0f} %",
            (share, value),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    gain_axes.axhline(
        STAR_GROUPING_GAIN,
        color=PUBLISHED_COLOUR,
        linestyle="--",
        label=f"STAR: {STAR_GROUPING_GAIN:.0f} % in realistic use ({STAR_2006.short})",
    )
    crossing = analysis.share_for_gain(STAR_GROUPING_GAIN)
    if crossing is not None:
        gain_axes.axvline(100.0 * crossing, color=PUBLISHED_COLOUR, linestyle=":", linewidth=1)
        gain_axes.annotate(
            f"{STAR_GROUPING_GAIN:.0f} % at {100.0 * crossing:.0f} % bulk",
            (100.0 * crossing, STAR_GROUPING_GAIN),
            textcoords="offset points",
            xytext=(4, -12),
            fontsize=8,
            color=PUBLISHED_COLOUR,
        )
    gain_axes.set_xlim(-5, 105)
    gain_axes.set_xlabel("Share of the files in bulk restores (%)")
    every = [*values, batch.gain_percent]
    if min(every) > 0:  # gains an order of magnitude apart: log, unless one is not a gain at all
        _plain_log(gain_axes)
        gain_axes.set_ylim(min(every) / 2, max(every) * 4)
        gain_axes.set_ylabel("Throughput gain from grouping (%, log scale)")
    else:
        gain_axes.axhline(0.0, color=BOUND_COLOUR, linewidth=0.8)
        gain_axes.set_ylabel("Throughput gain from grouping (%)")
    gain_axes.set_title("Gain from grouping by tape against the share of bulk work", fontsize=10)
    gain_axes.legend(fontsize=8, loc="upper left")
    gain_axes.grid(True, alpha=0.3)
    return save_png(figure, path)
