"""Scheduling policies by simulation: seed 003's (STAR 2006) figures on queue depth and
grouping by tape, checked by replaying STAR-like and modern workloads under every policy.

`run(out_dir, progress)` replays the study's workloads (studies.policies.runs) under fifo, star2006, cta and
carousel side by side, sweeps star2006's HSM-side queue depth and every policy's drive count, measures the
gain from grouping by tape, and writes the tables, figures and published-vs-reproduced rows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from studies.policies.analysis import analyse_policies, replay_count
from studies.policies.figures import depth_figure, drives_figure, grouping_figure, side_by_side_figure
from studies.policies.published import policy_comparisons, policy_findings, policy_headlines
from studies.policies.runs import PolicySettings
from studies.policies.tables import write_policy_tables
from studies.result import FigureFile, Progress, StudyResult, no_progress, write_comparisons_csv

NAME = "policies"
TITLE = "Scheduling policies by simulation: queue depth, drives and grouping by tape"
_FIGURES = 4


def run(out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    return run_with(PolicySettings(), out_dir, progress)


def run_with(settings: PolicySettings, out_dir: Path, progress: Progress = no_progress) -> StudyResult:
    replays = replay_count(settings)
    total = replays + 1 + _FIGURES
    out_dir.mkdir(parents=True, exist_ok=True)
    analysis = analyse_policies(settings, progress, first_step=0, total_steps=total)
    progress("writing tables", replays, total)
    tables = write_policy_tables(out_dir, analysis)
    rows = policy_comparisons(analysis)
    tables.append(write_comparisons_csv(rows, out_dir / "published_vs_reproduced.csv"))
    figure_jobs: tuple[tuple[str, Callable[[], Path], str], ...] = (
        (
            "the policies side by side",
            lambda: side_by_side_figure(analysis, out_dir / "policies_side_by_side.png"),
            "Each policy on each workload: throughput against the physical bound, files per mount, latency "
            "percentiles and makespan over the bound.",
        ),
        (
            "the depth sweep",
            lambda: depth_figure(analysis, out_dir / "depth_sweep.png"),
            "star2006's HSM-side queue depth against throughput (STAR's 'within 10 %' drawn as a band around "
            "depth 30) and latency, on the STAR batch and the STAR stream; dotted lines: STAR's depths.",
        ),
        (
            "the drive sweep",
            lambda: drives_figure(analysis, out_dir / "drive_sweep.png"),
            "Throughput and median latency of each policy against the number of drives, STAR batch.",
        ),
        (
            "the grouping gain",
            lambda: grouping_figure(analysis, out_dir / "grouping_gain.png"),
            "STAR's configuration with (star2006) and without (fifo) grouping by tape, and the gain against "
            "the 20 % STAR reported (dashed).",
        ),
    )
    figures = []
    for index, (step, draw, caption) in enumerate(figure_jobs, start=replays + 1):
        progress(f"drawing {step}", index, total)
        figures.append(FigureFile(draw(), caption))
    progress("done", total, total)
    return StudyResult(
        name=NAME,
        title=TITLE,
        tables=tuple(tables),
        figures=tuple(figures),
        comparisons=rows,
        findings=policy_findings(analysis),
        headlines=policy_headlines(analysis),
    )
