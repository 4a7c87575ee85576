"""The CSV tables behind the policy study's figures (times in seconds, rates in decimal MB/s, gains in %)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from studies.policies.analysis import DEPTH_WORKLOADS, PolicyAnalysis
from studies.policies.runs import POLICIES, STAR_BATCH, RunRow
from studies.result import write_csv

SIDE_BY_SIDE_CSV = "policies_side_by_side.csv"
DEPTH_CSV = "depth_sweep.csv"
DRIVES_CSV = "drive_sweep.csv"
GROUPING_CSV = "grouping_gain.csv"
WORKLOADS_CSV = "workloads.csv"

RUN_COLUMNS = (
    "workload",
    "policy",
    "drives",
    "depth",
    "files",
    "makespan_s",
    "bound_s",
    "makespan_over_bound",
    "throughput_mb_s",
    "bound_throughput_mb_s",
    "mounts",
    "files_per_mount",
    "efficiency",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
)
GROUPING_COLUMNS = (
    "workload",
    "bulk_share_percent",
    "throughput_without_mb_s",
    "throughput_grouped_mb_s",
    "gain_percent",
    "files_per_mount_without",
    "files_per_mount_grouped",
    "latency_p50_without_s",
    "latency_p50_grouped_s",
)


def _run_rows(rows: Iterable[RunRow]) -> list[tuple[object, ...]]:
    return [
        (
            row.workload,
            row.policy,
            row.drives,
            row.depth_text,
            row.files,
            row.makespan_s,
            row.bound_s,
            row.makespan_over_bound,
            row.throughput_mb_s,
            row.bound_throughput_mb_s,
            row.mounts,
            row.files_per_mount,
            row.efficiency,
            row.latency_p50_s,
            row.latency_p95_s,
            row.latency_p99_s,
        )
        for row in rows
    ]


def write_policy_tables(out_dir: Path, analysis: PolicyAnalysis) -> list[Path]:
    # the stream and the mixes by share of files in bulk restores, then the batch (all of it at once)
    grouping = [(100.0 * share, gain) for share, gain in analysis.grouping_by_share()]
    grouping.append((100.0, analysis.grouping_gain(STAR_BATCH)))
    workloads = [*analysis.workloads.values(), *analysis.mixes.values()]
    return [
        write_csv(
            out_dir / WORKLOADS_CSV,
            ("workload", "profile", "drives", "rows", "description"),
            [(w.name, w.profile, w.drives, len(w.trace.rows), w.description) for w in workloads],
        ),
        write_csv(
            out_dir / SIDE_BY_SIDE_CSV,
            RUN_COLUMNS,
            _run_rows(row for name in analysis.workloads for row in analysis.side_by_side(name)),
        ),
        write_csv(
            out_dir / DEPTH_CSV,
            RUN_COLUMNS,
            _run_rows(row for name in DEPTH_WORKLOADS for row in analysis.depth_sweep(name)),
        ),
        write_csv(
            out_dir / DRIVES_CSV,
            RUN_COLUMNS,
            _run_rows(row for policy in POLICIES for row in analysis.drive_sweep(policy)),
        ),
        write_csv(
            out_dir / GROUPING_CSV,
            GROUPING_COLUMNS,
            [
                (
                    gain.workload,
                    share,
                    gain.without.throughput_mb_s,
                    gain.grouped.throughput_mb_s,
                    gain.gain_percent,
                    gain.without.files_per_mount,
                    gain.grouped.files_per_mount,
                    gain.without.latency_p50_s,
                    gain.grouped.latency_p50_s,
                )
                for share, gain in grouping
            ],
        ),
    ]
