"""Worker-node disks under concurrent analysis jobs: seeds 000 and 001 (Glasgow) and 002 (BNL).

`run(out_dir)` fits the disk model on the published FileStager efficiencies, checks it against the raw
runs, predicts the held-out long-term efficiencies and BNL saturation points, recomputes the price/performance
table, and writes the tables, figures and published-vs-reproduced rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from studies.result import FigureFile, Progress, StudyResult, no_progress, write_comparisons_csv
from studies.sources import BNL_2009, GLASGOW_2010, GRIDPP_WIKI, cite
from studies.worker_disks.analysis import (
    BNL_DEVICES,
    ProfilePoint,
    WorkerDiskAnalysis,
    analyse,
    throughput_inconsistencies,
)
from studies.worker_disks.comparisons import (
    FIT_RMS_LIMIT_POINTS,
    bnl_consistent_point,
    comparisons,
    label,
    points,
    sustained_statements,
)
from studies.worker_disks.data import STORAGE_NAMES, WorkerDiskData, load_worker_disk_data
from studies.worker_disks.figures import (
    bnl_figure,
    efficiency_figure,
    price_performance_figure,
    profile_figure,
    residuals_figure,
)
from studies.worker_disks.price_performance import recompute_price_performance
from studies.worker_disks.tables import write_tables

NAME = "worker-disks"
TITLE = "Worker-node disks under concurrent analysis jobs"


def _findings(
    data: WorkerDiskData, analysis: WorkerDiskAnalysis, consistent: ProfilePoint | None
) -> tuple[str, ...]:
    fit = analysis.fit
    mid = analysis.bnl_mid
    largest_error = max(abs(error) for error in fit.residuals)
    findings = [
        f"Fit on the {len(fit.observations)} FileStager points of {GLASGOW_2010.short}: "
        f"RMS {points(fit.rms):.2f} points (limit {FIT_RMS_LIMIT_POINTS:g}); "
        f"largest error {points(largest_error):.2f} points.",
        f"{GRIDPP_WIKI.short} raw FileStager runs, not fitted: "
        f"RMS {points(analysis.raw_runs_rms):.2f} points; "
        f"paper and raw runs differ by {points(analysis.repeat_scatter):.2f} points RMS per configuration.",
        "Long-term (held out): "
        + ", ".join(
            f"{label(p)} {points(p.observation.efficiency):.0f}% vs {points(p.predicted):.1f}%"
            for p in analysis.longterm
        )
        + ".",
        f"BNL at {mid.worker_read_rate_mb_s:g} MB/s per worker (held out, best fit): workers sustained "
        + ", ".join(f"{STORAGE_NAMES[s]} {mid.saturation[s]:.1f}" for s in BNL_DEVICES)
        + f"; SSD/HDD rate at {mid.cores} workers {mid.ssd_over_hdd_full_load:.1f}.",
    ]
    if fit.parameters_at_bounds:
        findings.append(f"Parameters at a bound of the fit: {', '.join(fit.parameters_at_bounds)}.")
    if consistent is None:
        findings.append(
            f"No pinned Glasgow job read rate makes every BNL prediction agree with {BNL_2009.short}."
        )
    else:
        findings.append(
            f"Pinning the Glasgow job read rate at {consistent.job_read_rate_mb_s:.2f} MB/s makes every BNL "
            f"prediction agree with {BNL_2009.short}, at a Glasgow fit RMS of "
            f"{points(consistent.fit.rms):.2f}."
        )
    for row, value in throughput_inconsistencies(data):
        findings.append(
            f"{cite(row.source)}: {row.storage} {row.cores}:{row.jobs} throughput {row.throughput_text} is "
            "not "
            f"jobs x efficiency ({value:.2f})."
        )
    return tuple(findings)


def _headlines(data: WorkerDiskData, analysis: WorkerDiskAnalysis) -> tuple[str, ...]:
    """For a storage admin: how many analysis jobs a worker node's disk serves, and what crowding costs."""
    rate = data.bnl_statement("worker_read_rate", workload="proof")
    sustained = ", ".join(
        f"{STORAGE_NAMES[storage]} {_span(stated.low, stated.high)}"
        for storage, stated in sustained_statements(data).items()
    )
    fit = analysis.fit
    crowded = [
        (observation, predicted)
        for observation, predicted in zip(fit.observations, fit.predicted, strict=True)
        if observation.jobs == max(o.jobs for o in fit.observations)
    ]
    efficiencies = ", ".join(
        f"{points(o.efficiency):.0f} % on {STORAGE_NAMES[o.storage]} (model {points(p):.0f} %)"
        for o, p in crowded
    )
    return (
        f"A worker node's disk caps the analysis jobs that read from it at once: with each job reading "
        f"{_span(rate.low, rate.high)} MB/s, {BNL_2009.short} finds these sustain {sustained} jobs.",
        f"With {crowded[0][0].jobs} concurrent jobs on a node, FileStager jobs use their CPU {efficiencies} "
        f"of the time ({GLASGOW_2010.short}; the fitted model is within {points(fit.rms):.1f} points RMS).",
    )


def _span(low: float, high: float) -> str:
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def run(out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    total = 8
    out_dir.mkdir(parents=True, exist_ok=True)
    progress("loading the transcribed figures", 0, total)
    data = load_worker_disk_data()
    progress("fitting the disk model", 1, total)
    analysis = analyse(data)
    table = recompute_price_performance(data)
    consistent = bnl_consistent_point(data, analysis)
    progress("writing tables", 2, total)
    tables = write_tables(out_dir, data, analysis, table)
    rows = comparisons(data, analysis, table)
    tables.append(write_comparisons_csv(rows, out_dir / "published_vs_reproduced.csv"))
    sustained = sustained_statements(data)
    ratio = data.bnl_statement("ssd_over_hdd_rate_full_load", workload="h4l")
    scatter = points(analysis.repeat_scatter)
    figure_jobs: tuple[tuple[str, Callable[[], Path], str], ...] = (
        (
            "efficiency against concurrent jobs",
            lambda: efficiency_figure(analysis, out_dir / "efficiency_vs_jobs.png"),
            "Mean job CPU efficiency against concurrent jobs: model curves, "
            f"{GLASGOW_2010.short} table (fitted), {GRIDPP_WIKI.short} runs and long-term values "
            "(not fitted).",
        ),
        (
            "per-point errors",
            lambda: residuals_figure(analysis, scatter, out_dir / "efficiency_errors.png"),
            "Model minus published efficiency for every point, fitted, checked and held out.",
        ),
        (
            "BNL holdout",
            lambda: bnl_figure(analysis, consistent, sustained, out_dir / "bnl_saturation.png"),
            "BNL single-node read rate against PROOF workers, and the workers each device sustains.",
        ),
        (
            "read-rate profile",
            lambda: profile_figure(analysis, consistent, sustained, ratio, out_dir / "read_rate_profile.png"),
            "What the Glasgow fit leaves loose: fit error and BNL predictions with the job read rate pinned.",
        ),
        (
            "price/performance",
            lambda: price_performance_figure(table, out_dir / "price_performance.png"),
            f"The price/performance table of {GLASGOW_2010.short}, published and recomputed.",
        ),
    )
    figures = []
    for index, (step, draw, caption) in enumerate(figure_jobs, start=3):
        progress(f"drawing {step}", index, total)
        figures.append(FigureFile(draw(), caption))
    progress("done", total, total)
    return StudyResult(
        name=NAME,
        title=TITLE,
        tables=tuple(tables),
        figures=tuple(figures),
        comparisons=tuple(rows),
        findings=_findings(data, analysis, consistent),
        headlines=_headlines(data, analysis),
    )
