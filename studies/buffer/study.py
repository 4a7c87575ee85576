"""Disk buffer size by simulation: throughput and files per mount against the buffer's size (in hours of the
drives' streaming rate) for a bulk campaign whose clients release each file a given time after staging; where
throughput collapses; and the rule of thumb (Little's law: buffer = throughput x (staging latency + time
held)) checked against the simulation.

`run(out_dir, progress)` replays the campaign once without a buffer limit and once per buffer size
(studies.buffer.runs), and writes the sweep's table, the figure and the Little's-law rows.
"""

from __future__ import annotations

from pathlib import Path

from studies.buffer.analysis import (
    analyse_buffer,
    buffer_comparisons,
    buffer_findings,
    buffer_headlines,
    sweep_rows,
)
from studies.buffer.figures import buffer_figure
from studies.buffer.runs import BufferSettings
from studies.result import FigureFile, Progress, StudyResult, no_progress, write_comparisons_csv, write_csv

NAME = "buffer"
TITLE = "Disk buffer size by simulation: throughput, files per mount and Little's law"
SWEEP_CSV = "buffer_sweep.csv"
SWEEP_COLUMNS = (
    "buffer_hours",
    "buffer_bytes",
    "throughput_mb_s",
    "makespan_s",
    "mounts",
    "files_per_mount",
    "stage_latency_s",
    "little_hours",
    "peak_on_disk_bytes",
    "failed",
)


def run(out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    return run_with(BufferSettings(), out_dir, progress)


def run_with(settings: BufferSettings, out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    total = len(settings.buffer_hours) + 4
    out_dir.mkdir(parents=True, exist_ok=True)
    analysis = analyse_buffer(settings, progress, total_steps=total)
    progress("writing tables", total - 2, total)
    table = write_csv(
        out_dir / SWEEP_CSV,
        SWEEP_COLUMNS,
        (
            (
                "" if r.buffer_hours is None else r.buffer_hours,
                "" if r.buffer_bytes is None else r.buffer_bytes,
                round(r.throughput_bytes_per_s / 1e6, 3),
                round(r.makespan_s, 1),
                r.mounts,
                round(r.files_per_mount, 2),
                round(r.stage_latency_s, 1),
                round(analysis.hours(r.little_bytes(settings.hold_s)), 4),
                "" if r.peak_on_disk_bytes is None else r.peak_on_disk_bytes,
                r.failed,
            )
            for r in sweep_rows(analysis)
        ),
    )
    rows = buffer_comparisons(analysis)
    comparisons = write_comparisons_csv(rows, out_dir / "published_vs_reproduced.csv")
    progress("drawing the sweep", total - 1, total)
    figure = FigureFile(
        buffer_figure(analysis, out_dir / "buffer_sweep.png"),
        "Throughput (left) and files per mount (middle) against the disk buffer's size in hours of the "
        "drives' streaming rate; dashed: no buffer limit, red: Little's law's size from the unlimited run. "
        "Right: in the runs the buffer limits, the bytes Little's law says were held against the buffer's "
        "size.",
    )
    progress("done", total, total)
    return StudyResult(
        name=NAME,
        title=TITLE,
        tables=(table, comparisons),
        figures=(figure,),
        comparisons=rows,
        findings=buffer_findings(analysis),
        headlines=buffer_headlines(analysis),
    )
