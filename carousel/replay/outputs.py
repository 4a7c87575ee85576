"""A replay's outputs: files.csv, mounts.csv and summary.json, and the side-by-side table of a comparison.

Times are seconds from the trace's second 0, to the millisecond. Latency is end − arrival of each trace row
whose file reached disk.

A site of several libraries (docs/decisions.md §17) adds a `library` column to files.csv and mounts.csv, and
summary.json gives each library's figures under `libraries` beside the site's totals (a site of one library
has the one entry, `default`).
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from carousel.domain.libraries import DEFAULT_LIBRARY, usage_weights
from carousel.domain.queue import split_mount_time
from carousel.domain.states import FileState
from carousel.replay.bound import PhysicalBound, physical_bound
from carousel.replay.driver import EPOCH, LibraryRun, ReplayConfig, ReplayResult
from carousel.replay.trace import make_trace

FILES_HEADER = (
    "path",
    "request",
    "tape",
    "group",
    "arrival_s",
    "start_s",
    "end_s",
    "state",
    "mount",
    "drive",
)
MOUNTS_HEADER = ("mount", "tape", "drive", "requested_s", "mounted_s", "unmounted_s", "files", "bytes")
COMPARE_COLUMNS = (
    "policy",
    "makespan_s",
    "bound_s",
    "makespan_over_bound",
    "binding",
    "throughput_mb_s",
    "mounts",
    "files_per_mount",
    "efficiency",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "failed",
    "library",
)


def seconds(when: datetime | None) -> float | None:
    return None if when is None else round((when - EPOCH).total_seconds(), 3)


def write_outputs(result: ReplayResult, out: Path) -> dict[str, Any]:
    """Writes files.csv, mounts.csv and summary.json into `out` (created if needed); returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    _write_files(result, out / "files.csv")
    _write_mounts(result, out / "mounts.csv")
    summary = summarise(result)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return summary


def _write_files(result: ReplayResult, path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        several = bool(result.config.libraries)
        writer.writerow((*FILES_HEADER, *(("library",) if several else ())))
        for row, outcome in zip(result.trace.rows, result.store.rows, strict=True):
            writer.writerow(
                (
                    row.path,
                    row.request,
                    row.tape,
                    row.group,
                    _text(row.arrival_s),
                    _text(seconds(outcome.start)),
                    _text(seconds(outcome.end)),
                    outcome.state.value if outcome.state else "PENDING",
                    "" if outcome.mount is None else outcome.mount,
                    outcome.drive or "",
                    *((row.library,) if several else ()),
                )
            )


def _write_mounts(result: ReplayResult, path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        several = bool(result.config.libraries)
        writer.writerow((*MOUNTS_HEADER, *(("library",) if several else ())))
        for mount in result.store.mounts:
            writer.writerow(
                (
                    mount.number,
                    mount.tape,
                    mount.drive or "",
                    _text(seconds(mount.requested)),
                    _text(seconds(mount.mounted)),
                    _text(seconds(mount.unmounted)),
                    mount.files,
                    mount.bytes,
                    *((mount.library,) if several else ()),
                )
            )


def _text(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def scheduling_of(config: ReplayConfig) -> dict[str, Any]:
    """The service settings a replay planned with, as summary.json records them."""
    return {
        "max_files_per_cycle": config.max_files_per_cycle,
        "max_attempts": config.max_attempts,
        "retry_backoff_s": config.retry_backoff_s,
        "fair_share_window_s": config.fair_share_window_s,
        "read_timeout_factor": config.read_timeout_factor,
        "read_timeout_margin_s": config.read_timeout_margin_s,
        **asdict(config.feed),
    }


def summarise(result: ReplayResult, bound: PhysicalBound | None = None) -> dict[str, Any]:
    """The replay's figures; for a site of several libraries, the site's totals (its bound: the largest of
    its libraries', which are independent resources) and each library's under `libraries`."""
    several = bool(result.config.libraries)
    bounds: dict[str, PhysicalBound] = {}
    if several:
        for run in result.libraries:
            own = make_trace((r for r in result.trace.rows if r.library == run.name), result.trace.source)
            bounds[run.name] = (
                physical_bound(own, run.physics, run.drives, run.setup.robots) if own.rows else _NONE
            )
        binding_library = max(bounds, key=lambda name: bounds[name].bound_s)
        bound = bound or bounds[binding_library]
    else:
        bound = bound or physical_bound(
            result.trace, result.physics, result.config.drives, result.setup.robots
        )
        bounds[DEFAULT_LIBRARY] = bound
        binding_library = DEFAULT_LIBRARY
    rows = result.trace.rows
    outcomes = result.store.rows
    staged = [(row, o) for row, o in zip(rows, outcomes, strict=True) if o.state is FileState.STAGED]
    ends = [seconds(o.end) for o in outcomes if o.end is not None]
    makespan = max((e for e in ends if e is not None), default=0.0)
    files_read = [f for f in result.store.files if f.state is FileState.STAGED]
    read_bytes = sum(f.size for f in files_read)
    runs = _runs(result)
    busy = sum(sum(run.stats.drive_busy_s.values()) for run in runs)
    reading = sum(sum(run.stats.drive_read_s.values()) for run in runs)
    latencies: dict[str, list[float]] = {}
    for row, outcome in staged:
        end = seconds(outcome.end)
        assert end is not None
        latencies.setdefault(row.group, []).append(end - row.arrival_s)
    every = [v for values in latencies.values() for v in values]
    profile = asdict(result.profile)
    profile["estimated"] = sorted(result.profile.estimated)
    return {
        "policy": result.config.policy,
        "policy_options": dict(result.config.policy_options),
        "trace": result.trace.source,
        "requests": len({row.request for row in rows}),
        "rows": len(rows),
        "drives": sum(run.drives for run in runs),
        "seed": result.config.seed,
        "cycle_interval_s": result.config.cycle_interval_s,
        "scheduling": scheduling_of(result.config),
        "library": result.setup.describe(),
        "makespan_s": round(makespan, 3),
        "files": len(files_read),
        "bytes": read_bytes,
        "failed": sum(1 for f in result.store.files if f.state is FileState.FAILED),
        "mounts": len(result.store.mounts),
        "files_per_mount": round(len(files_read) / len(result.store.mounts), 3)
        if result.store.mounts
        else 0.0,
        "drive_busy_s": round(busy, 3),
        "drive_read_s": round(reading, 3),
        "throughput_bytes_per_s": round(read_bytes / makespan, 3) if makespan else 0.0,
        "efficiency": round(reading / busy, 5) if busy else 0.0,
        "latency_s": _percentiles(every),
        "latency_by_group_s": {group: _percentiles(values) for group, values in sorted(latencies.items())},
        "physical_bound_s": round(bound.bound_s, 3),
        "physical_bound_locate_free_s": round(bound.locate_free_s, 3),
        "makespan_over_bound": round(makespan / bound.bound_s, 4) if bound.bound_s else None,
        "bound_detail": {
            "binding": bound.binding,
            "drives_s": round(bound.drives_s, 3),
            "robots_s": round(bound.robots_s, 3),
            "a_tape_s": round(bound.a_tape_s, 3),
            "last_arrival_service_s": round(bound.last_arrival_service_s, 3),
            "tapes": bound.tapes,
            "work_s": round(bound.work_s, 3),
            "locate_s": round(bound.locate_s, 3),
            "robots": bound.robots,
            "robot_moves": bound.robot_moves,
            "library": binding_library,
        },
        "robot_wait_s": round(sum(run.stats.robot_wait_s for run in runs), 3),
        "cycles": result.cycles,
        "buffer": buffer_summary(result),
        "profile": profile if not several else None,  # each library's is under `libraries`
        "usage_reference_drive_s": _usage(result, runs, None),
        "libraries": {run.name: _library_part(result, run, bounds[run.name], runs) for run in runs},
    }


_NONE = PhysicalBound(0.0, 0.0, "none", 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1, 0)  # a library with no rows


def _runs(result: ReplayResult) -> tuple[LibraryRun, ...]:
    return result.libraries or (
        LibraryRun(
            DEFAULT_LIBRARY,
            result.config.drives,
            result.setup,
            result.profile,
            result.physics,
            result.library,
        ),
    )


def _usage(result: ReplayResult, runs: tuple[LibraryRun, ...], library: str | None) -> dict[str, float]:
    """Drive time each group used over the whole replay (of `library`, or of the site), in reference
    drive-seconds: the unit fair share accounts in across libraries (docs/decisions.md §17)."""
    weights = usage_weights({run.name: run.profile.rate_bytes_per_s for run in runs})
    spans = [
        (
            ((mount.unmounted or mount.mounted) - mount.mounted).total_seconds()
            * weights.get(mount.library, 1.0),
            mount.started_by_group,
        )
        for mount in result.store.mounts
        if mount.started_by_group and library in (None, mount.library)
    ]
    return {usage.group: round(usage.drive_s, 3) for usage in split_mount_time(spans)}


def _library_part(
    result: ReplayResult, run: LibraryRun, bound: PhysicalBound, runs: tuple[LibraryRun, ...]
) -> dict[str, Any]:
    """One library's figures: what it read, over its own makespan (its last file's end), against its bound."""
    several = bool(result.config.libraries)
    files = [f for f in result.store.files if not several or f.library == run.name]
    read = [f for f in files if f.state is FileState.STAGED]
    read_bytes = sum(f.size for f in read)
    ends = [seconds(f.ended_at) for f in files if f.ended_at is not None]
    makespan = max((e for e in ends if e is not None), default=0.0)
    mounts = [m for m in result.store.mounts if not several or m.library == run.name]
    busy = sum(run.stats.drive_busy_s.values())
    reading = sum(run.stats.drive_read_s.values())
    return {
        "profile": run.profile.name,
        "drives": run.drives,
        "library": run.setup.describe(),
        "makespan_s": round(makespan, 3),
        "files": len(read),
        "bytes": read_bytes,
        "failed": sum(1 for f in files if f.state is FileState.FAILED),
        "mounts": len(mounts),
        "files_per_mount": round(len(read) / len(mounts), 3) if mounts else 0.0,
        "drive_busy_s": round(busy, 3),
        "drive_read_s": round(reading, 3),
        "throughput_bytes_per_s": round(read_bytes / makespan, 3) if makespan else 0.0,
        "efficiency": round(reading / busy, 5) if busy else 0.0,
        "physical_bound_s": round(bound.bound_s, 3),
        "makespan_over_bound": round(makespan / bound.bound_s, 4) if bound.bound_s else None,
        "binding": bound.binding,
        "robot_wait_s": round(run.stats.robot_wait_s, 3),
        "usage_reference_drive_s": _usage(result, runs, run.name if several else None),
    }


def buffer_summary(result: ReplayResult) -> dict[str, Any] | None:
    """The disk buffer the replay modelled: accounting only, no bytes are written (None: no buffer)."""
    limits, buffer = result.config.buffer, result.store.buffer
    if limits is None or buffer is None:
        return None
    return {
        "mode": "accounting only",
        "capacity_bytes": limits.capacity_bytes,
        "high_watermark": limits.high_watermark,
        "low_watermark": limits.low_watermark,
        "release_after_s": result.config.release_after_s,
        "peak_on_disk_bytes": buffer.peak_on_disk_bytes,
        "evicted_files": buffer.evicted_files,
        "evicted_bytes": buffer.evicted_bytes,
    }


def _percentiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "p99": None, "count": 0}
    p50, p95, p99 = np.percentile(np.asarray(values), [50, 95, 99]).tolist()
    return {"p50": round(p50, 3), "p95": round(p95, 3), "p99": round(p99, 3), "count": len(values)}


def compare_row(summary: dict[str, Any]) -> dict[str, Any]:
    latency = summary["latency_s"]
    return {
        "policy": summary["policy"],
        "makespan_s": summary["makespan_s"],
        "bound_s": summary["physical_bound_s"],
        "makespan_over_bound": summary["makespan_over_bound"],
        "binding": summary["bound_detail"]["binding"],
        "throughput_mb_s": round(summary["throughput_bytes_per_s"] / 1e6, 3),
        "mounts": summary["mounts"],
        "files_per_mount": summary["files_per_mount"],
        "efficiency": summary["efficiency"],
        "latency_p50_s": latency["p50"],
        "latency_p95_s": latency["p95"],
        "latency_p99_s": latency["p99"],
        "failed": summary["failed"],
        "library": summary["library"],
    }


LIBRARY_COLUMNS = (
    "policy",
    "library_name",
    "profile",
    "drives",
    "makespan_s",
    "bound_s",
    "makespan_over_bound",
    "binding",
    "throughput_mb_s",
    "mounts",
    "files_per_mount",
    "efficiency",
)


def library_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A summary's per-library figures, a row each (the printed report and compare_libraries.csv)."""
    return [
        {
            "policy": summary["policy"],
            "library_name": name,
            "profile": part["profile"],
            "drives": part["drives"],
            "makespan_s": part["makespan_s"],
            "bound_s": part["physical_bound_s"],
            "makespan_over_bound": part["makespan_over_bound"],
            "binding": part["binding"],
            "throughput_mb_s": round(part["throughput_bytes_per_s"] / 1e6, 3),
            "mounts": part["mounts"],
            "files_per_mount": part["files_per_mount"],
            "efficiency": part["efficiency"],
        }
        for name, part in summary["libraries"].items()
    ]


def write_library_compare(rows: list[dict[str, Any]], path: Path) -> None:
    """compare_libraries.csv: each policy's figures per library (a site of several libraries)."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LIBRARY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def write_compare(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COMPARE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
