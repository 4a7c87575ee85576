"""The worker-node disk study's figures: published points drawn over the model's curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import NullFormatter

from studies.figures import new_figure, save_png
from studies.sources import BNL_2009, GLASGOW_2010, GRIDPP_WIKI, cite
from studies.worker_disks.analysis import (
    BNL_DEVICES,
    Prediction,
    ProfilePoint,
    WorkerDiskAnalysis,
    efficiency_curve,
    fit_predictions,
)
from studies.worker_disks.data import STORAGE_NAMES, BnlStatement
from studies.worker_disks.price_performance import PricePerformance

COLOURS = {
    "hdd": "#1f77b4",
    "raid1_2hdd": "#9467bd",
    "raid0_2hdd": "#2ca02c",
    "raid0_3hdd": "#2ca02c",
    "ssd_intel": "#d62728",
    "ssd_kingston": "#ff7f0e",
    "ssd_mtron": "#d62728",
}
GLASGOW_8_CORE = ("hdd", "raid1_2hdd", "raid0_2hdd", "ssd_intel", "ssd_kingston")
GLASGOW_24_CORE = ("raid0_2hdd", "ssd_intel")


def _points(axes: Axes, predictions: Sequence[Prediction], storage: str, cores: int, **style: Any) -> None:
    chosen = [p for p in predictions if p.observation.storage == storage and p.observation.cores == cores]
    if chosen:
        axes.plot(
            [p.observation.jobs for p in chosen],
            [100.0 * p.observation.efficiency for p in chosen],
            linestyle="none",
            color=COLOURS[storage],
            **style,
        )


def efficiency_figure(analysis: WorkerDiskAnalysis, path: Path) -> Path:
    figure = new_figure(11.0, 4.8)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    fitted = [
        Prediction(o, p) for o, p in zip(analysis.fit.observations, analysis.fit.predicted, strict=True)
    ]
    for axes, cores, devices in ((left, 8, GLASGOW_8_CORE), (right, 24, GLASGOW_24_CORE)):
        jobs = np.arange(1, cores + 1)
        for storage in devices:
            axes.plot(
                jobs,
                [100.0 * value for value in efficiency_curve(analysis, storage, cores)],
                color=COLOURS[storage],
                label=f"{STORAGE_NAMES[storage]} (model)",
            )
            _points(axes, fitted, storage, cores, marker="o", markersize=8)
            _points(axes, analysis.raw_runs, storage, cores, marker="o", markersize=8, fillstyle="none")
            _points(axes, analysis.longterm, storage, cores, marker="*", markersize=14)
        axes.set_xlabel("concurrent jobs per node")
        axes.set_ylabel("mean job CPU efficiency (%)")
        axes.set_xlim(0.5, cores + 0.5)
        axes.grid(alpha=0.3)
    left.set_title("8-core nodes (FileStager)")
    right.set_title("24-core node (FileStager; page cache fitted)")
    left.set_ylim(40, 100)
    right.set_ylim(40, 100)
    # Empty plots give the legend one entry per kind of published point.
    left.plot([], [], "ko", markersize=8, label=f"{GLASGOW_2010.short} table (fitted)")
    left.plot([], [], "ko", markersize=8, fillstyle="none", label=f"{GRIDPP_WIKI.short} runs (not fitted)")
    left.plot([], [], "k*", markersize=12, label=f"{GLASGOW_2010.short} long-term (held out)")
    left.legend(loc="lower left", fontsize=8)
    right.legend(loc="lower left", fontsize=8)
    return save_png(figure, path)


def residuals_figure(analysis: WorkerDiskAnalysis, tolerance_points: float, path: Path) -> Path:
    groups = (
        ("fitted", fit_predictions(analysis), "#1f77b4"),
        ("checked, not fitted", analysis.raw_runs, "#7f7f7f"),
        ("held out", analysis.longterm, "#d62728"),
    )
    labels, values, colours = [], [], []
    for _, predictions, colour in groups:
        for prediction in predictions:
            observation = prediction.observation
            labels.append(
                f"{STORAGE_NAMES[observation.storage]} {observation.cores}:{observation.jobs}"
                f"  [{cite(observation.source)}]"
            )
            values.append(100.0 * prediction.error)
            colours.append(colour)
    figure = new_figure(9.0, 0.32 * len(labels) + 1.6)
    axes = figure.subplots()
    positions = np.arange(len(labels))[::-1]
    axes.barh(positions, values, color=colours)
    axes.set_yticks(positions, labels, fontsize=8)
    axes.axvspan(-3, 3, color="#1f77b4", alpha=0.08)
    for side in (-1, 1):
        axes.axvline(side * tolerance_points, color="#d62728", linestyle=":", linewidth=1)
    handles = [
        *(Patch(color=colour, label=group) for group, _, colour in groups),
        Patch(color="#1f77b4", alpha=0.08, label="±3 points (fit requirement on the RMS)"),
        Line2D(
            [],
            [],
            color="#d62728",
            linestyle=":",
            label=f"±{tolerance_points:.1f} points (holdout tolerance)",
        ),
    ]
    axes.axvline(0, color="black", linewidth=0.8)
    axes.set_xlabel("model minus published efficiency (percentage points)")
    axes.set_title(
        f"Per-point error: fit RMS {100 * analysis.fit.rms:.2f} points, "
        f"{GRIDPP_WIKI.short} runs RMS {100 * analysis.raw_runs_rms:.2f} points"
    )
    figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    axes.grid(axis="x", alpha=0.3)
    return save_png(figure, path)


def bnl_figure(
    analysis: WorkerDiskAnalysis,
    consistent: ProfilePoint | None,
    sustained: dict[str, BnlStatement],
    path: Path,
) -> Path:
    figure = new_figure(11.0, 4.6)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1.4, 1]})
    low, mid, high = analysis.bnl
    workers = np.arange(1, mid.cores + 1)
    for storage in BNL_DEVICES:
        colour = COLOURS[storage]
        left.fill_between(workers, low.rates[storage], high.rates[storage], color=colour, alpha=0.15)
        left.plot(workers, mid.rates[storage], color=colour, label=f"{STORAGE_NAMES[storage]}, best fit")
        if consistent is not None:
            left.plot(
                workers,
                consistent.bnl.rates[storage],
                color=colour,
                linestyle="--",
                label=f"{STORAGE_NAMES[storage]}, Glasgow job rate pinned",
            )
    left.set_xlabel("PROOF workers per node")
    left.set_ylabel("aggregate read rate (MB/s)")
    left.set_title(
        f"BNL single node; band: {low.worker_read_rate_mb_s:g}-{high.worker_read_rate_mb_s:g} MB/s per worker"
    )
    left.legend(fontsize=7, loc="upper left")
    left.grid(alpha=0.3)

    rows = list(BNL_DEVICES)
    positions = np.arange(len(rows))[::-1]
    predictions = [(mid, 0.15, "full")] + ([] if consistent is None else [(consistent.bnl, -0.15, "none")])
    for position, storage in zip(positions, rows, strict=True):
        stated = sustained[storage]
        right.plot(
            [stated.low - 0.1, stated.high + 0.1],
            [position, position],
            color="#555555",
            linewidth=12,
            alpha=0.3,
        )
        for prediction, offset, fill in predictions:
            value = prediction.saturation[storage]
            right.plot(value, position + offset, "o", color=COLOURS[storage], fillstyle=fill, markersize=8)
            right.annotate(
                f"{value:.1f}",
                (value, position + offset),
                xytext=(7, -3),
                textcoords="offset points",
                fontsize=8,
            )
    largest = max(prediction.saturation[storage] for prediction, _, _ in predictions for storage in rows)
    right.axvline(mid.cores, color="black", linestyle=":", linewidth=1)
    right.text(mid.cores, positions[-1] - 0.6, "cores per node ", fontsize=8, ha="right")
    right.set_yticks(positions, [STORAGE_NAMES[storage] for storage in rows])
    right.set_xlim(0, max(largest, mid.cores) + 2)
    right.set_ylim(positions[-1] - 0.9, positions[0] + 0.6)
    right.set_xlabel("workers a device sustains (saturation point)")
    pinned = "" if consistent is None else f", hollow: pinned {consistent.job_read_rate_mb_s:.2f} MB/s"
    right.set_title(f"grey: {BNL_2009.short}; filled: best fit{pinned}", fontsize=9)
    right.grid(axis="x", alpha=0.3)
    ratio = f"SSD/HDD rate at {mid.cores} workers: best fit {mid.ssd_over_hdd_full_load:.1f}"
    if consistent is not None:
        ratio += f", pinned {consistent.bnl.ssd_over_hdd_full_load:.1f}"
    figure.suptitle(f"{ratio} ({BNL_2009.short}: about 10)", fontsize=10)
    return save_png(figure, path)


def profile_figure(
    analysis: WorkerDiskAnalysis,
    consistent: ProfilePoint | None,
    sustained: dict[str, BnlStatement],
    ratio: BnlStatement,
    path: Path,
) -> Path:
    figure = new_figure(12.0, 4.4)
    fit_axes, saturation_axes, ratio_axes = figure.subplots(1, 3)
    rates = [point.job_read_rate_mb_s for point in analysis.profile]
    fit_axes.plot(rates, [100.0 * point.fit.rms for point in analysis.profile], "o-", color="black")
    fit_axes.axhline(3.0, color="#d62728", linestyle=":", label="requirement: 3 points")
    fit_axes.plot(
        analysis.fit.parameters.job_read_rate_mb_s,
        100.0 * analysis.fit.rms,
        "*",
        color="#d62728",
        markersize=14,
    )
    fit_axes.set_ylabel(f"fit RMS on {GLASGOW_2010.short} FileStager (points)")
    fit_axes.set_title("Glasgow fit with the job read rate pinned", fontsize=10)
    for storage in ("hdd", "raid0_3hdd"):
        stated = sustained[storage]
        saturation_axes.axhspan(stated.low, stated.high, color=COLOURS[storage], alpha=0.15)
        saturation_axes.plot(
            rates,
            [point.bnl.saturation[storage] for point in analysis.profile],
            "o-",
            color=COLOURS[storage],
            label=f"{STORAGE_NAMES[storage]} (band: {BNL_2009.short})",
        )
    saturation_axes.set_ylabel("BNL workers sustained (predicted)")
    saturation_axes.set_title("BNL saturation predicted", fontsize=10)
    ratio_axes.axhspan(
        0.7 * ratio.low, 1.3 * ratio.high, color="#7f7f7f", alpha=0.15, label=f"{BNL_2009.short}: about 10"
    )
    ratio_axes.plot(
        rates, [point.bnl.ssd_over_hdd_full_load for point in analysis.profile], "o-", color="black"
    )
    ratio_axes.set_ylabel("BNL SSD / HDD read rate at 8 workers")
    ratio_axes.set_title("SSD over HDD at full load, predicted", fontsize=10)
    ticks = [0.3, 0.5, 1.0, 2.0, 5.0]
    for axes in (fit_axes, saturation_axes, ratio_axes):
        axes.axvline(
            analysis.fit.parameters.job_read_rate_mb_s,
            color="#d62728",
            linewidth=1,
            alpha=0.6,
            label=f"free fit ({analysis.fit.parameters.job_read_rate_mb_s:.2f} MB/s)",
        )
        if consistent is not None:
            axes.axvline(
                consistent.job_read_rate_mb_s,
                color="#2ca02c",
                linestyle="--",
                linewidth=1,
                label=f"all BNL statements met ({consistent.job_read_rate_mb_s:.2f} MB/s)",
            )
        axes.set_xscale("log")
        axes.set_xticks(ticks, [f"{tick:g}" for tick in ticks])
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.set_xlabel("Glasgow job read rate (MB/s per job, pinned)")
        axes.grid(alpha=0.3, which="both")
        axes.legend(fontsize=8)
    return save_png(figure, path)


def price_performance_figure(table: Sequence[PricePerformance], path: Path) -> Path:
    figure = new_figure(10.0, 4.3)
    panels = figure.subplots(1, 2)
    names = [entry.row.storage_label for entry in table]
    positions = np.arange(len(table))
    metrics = (
        (
            "price per throughput (GBP per job slot, 8-core node)",
            [(e.price_per_throughput, e.row.price_per_throughput_text) for e in table],
        ),
        ("price per capacity (GBP/GB)", [(e.price_per_gb, e.row.price_per_gb_text) for e in table]),
    )
    for axes, (label, values) in zip(panels, metrics, strict=True):
        axes.bar(
            positions - 0.2,
            [v.published for v, _ in values],
            width=0.4,
            label=f"published ({GLASGOW_2010.short})",
        )
        axes.bar(positions + 0.2, [v.exact for v, _ in values], width=0.4, label="recomputed from its inputs")
        for position, (value, printed) in zip(positions, values, strict=True):
            for offset, number in ((-0.2, printed), (0.2, f"{value.exact:.4g}")):
                axes.annotate(number, (position + offset, value.exact), ha="center", va="bottom", fontsize=8)
        axes.set_xticks(positions, names, fontsize=8)
        axes.set_ylabel(label, fontsize=9)
        axes.set_ylim(0, 1.12 * max(v.exact for v, _ in values))
        axes.grid(axis="y", alpha=0.3)
    figure.legend(*panels[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=8)
    return save_png(figure, path)
