"""The replays behind the policy study: its workloads, its settings and one row of measurements per replay.

The workloads, all scaled down from the repository's generators (carousel.replay.workloads) so that the
study stays within its time budget:

- STAR batch: star_batch's files (9 × 9940B) submitted at once. At full scale STAR's DataCarousel hands the
  library (K + overflow)·N = 1,125 files, 2 % of the 50,000-file batch, before the rest can be grouped; a
  scaled-down batch spread over star_batch's ten minutes would have half its files handed over one by one
  as they arrive. Submitted at once, the small batch keeps what the full one shows (star2006 at 2.6× the
  physical bound either way);
- STAR stream: star_batch's files (at their own scale) arriving one by one, uniformly over a window a little
  longer than fifo needs to read them, so the backlog stays modest: about 1.2 files a mount, the regime STAR
  reported for its random (XRootD-dominated) use, where its depth and grouping figures come from;
- LTO modern: lto_modern as generated (16 × LTO-9, bulk requests over 24 hours);
- STAR mixes: the stream with a share of its files taken out of the random traffic and submitted instead as
  three bulk restores (at the start, a third and two thirds of the window): the same files over the same
  window, so only the mix changes. STAR measured its grouping gain on such a mix (bulk restores, XRootD, other
  users) without saying in what shares.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from carousel.replay.bound import PhysicalBound, physical_bound
from carousel.replay.driver import ReplayConfig, replay
from carousel.replay.outputs import summarise
from carousel.replay.trace import Trace, make_trace
from carousel.replay.workloads import lto_modern, star_batch
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile

POLICIES = ("fifo", "star2006", "cta", "carousel")
STAR_BATCH = "STAR batch"
STAR_STREAM = "STAR stream"
LTO_MODERN = "LTO modern"
STAR_DRIVES = 9  # 9940B drives at STAR (seed 003)
LTO_DRIVES = 16
STAR_DEPTH = 30  # STAR's depth for its DST class of service (seed 003)
STAR_RAW_DEPTH = 20  # and for its Raw class, which the traces here do not use
MB = 1e6


@dataclass(frozen=True)
class StudyWorkload:
    name: str
    profile: str
    drives: int
    trace: Trace
    description: str


@dataclass(frozen=True)
class PolicySettings:
    """How big the study is; the defaults are what `carousel study` runs."""

    batch_scale: float = 0.03  # 1,500 files on 60 cartridges
    # 2,500 files on 100 cartridges: the backlog must outgrow the K·N = 750 files STAR's DataCarousel keeps
    # in flight before it has anything to group (at 0.03 it never does)
    stream_scale: float = 0.05
    lto_scale: float = 0.05  # 12 requests, 1,960 files on 50 cartridges
    # fifo reads a file in about 11 s on 9 drives (one mount each): arrivals a little slower than that
    stream_seconds_per_file: float = 12.0
    stream_seed: int = 2006
    depths: tuple[int, ...] = (5, 10, 20, 30, 50, 100)
    drive_counts: tuple[int, ...] = (1, 2, 4, 9, 16)
    # depths from about the drive count up: what STAR's "within 10 %" is checked over (below the drive
    # count a depth idles drives in any model)
    depth_claim_from: int = 10
    mix_bulk_shares: tuple[float, ...] = (0.1, 0.25, 0.5)  # of the stream's files, in bulk restores
    mix_seed: int = 7
    workers: int = 2  # replays run side by side in this many processes (1: in this one)

    def __post_init__(self) -> None:
        if STAR_DEPTH not in self.depths:
            raise ValueError(f"the depth sweep must include STAR's depth {STAR_DEPTH}")
        if not any(d >= self.depth_claim_from for d in self.depths if d != STAR_DEPTH):
            raise ValueError(f"the depth sweep needs a depth >= {self.depth_claim_from} besides {STAR_DEPTH}")


@dataclass(frozen=True)
class RunRow:
    """One replay's measurements (seconds, decimal MB/s)."""

    workload: str
    policy: str
    drives: int
    depth: int | None  # the HSM-side queue depth of STAR's DST class; None: the policy's library has none
    files: int
    makespan_s: float
    bound_s: float
    makespan_over_bound: float
    throughput_mb_s: float
    bound_throughput_mb_s: float
    mounts: int
    files_per_mount: float
    efficiency: float
    latency_p50_s: float
    latency_p95_s: float
    latency_p99_s: float

    @property
    def depth_text(self) -> str:
        return "" if self.depth is None else str(self.depth)


def _at_once(trace: Trace) -> Trace:
    return make_trace((dataclasses.replace(row, arrival_s=0.0) for row in trace.rows), trace.source)


def _stream(trace: Trace, window_s: float, seed: int) -> Trace:
    arrivals = np.sort(np.random.default_rng(seed).uniform(0.0, window_s, size=len(trace.rows)))
    return make_trace(
        (
            dataclasses.replace(row, arrival_s=round(float(arrival), 3))
            for row, arrival in zip(trace.rows, arrivals.tolist(), strict=True)
        ),
        trace.source,
    )


def study_workloads(settings: PolicySettings) -> dict[str, StudyWorkload]:
    batch = star_batch(settings.batch_scale)
    stream = star_batch(settings.stream_scale)
    lto = lto_modern(settings.lto_scale)
    stream_window_s = settings.stream_seconds_per_file * len(stream.rows)
    return {
        STAR_BATCH: StudyWorkload(
            STAR_BATCH,
            "t9940b",
            STAR_DRIVES,
            _at_once(batch),
            f"star_batch at scale {settings.batch_scale:g}: {_files_on(batch)} 9940B cartridges, submitted "
            f"at once, {STAR_DRIVES} drives",
        ),
        STAR_STREAM: StudyWorkload(
            STAR_STREAM,
            "t9940b",
            STAR_DRIVES,
            _stream(stream, stream_window_s, settings.stream_seed),
            f"star_batch's files at scale {settings.stream_scale:g}: {_files_on(stream)} 9940B cartridges, "
            f"arriving uniformly over {stream_window_s:,.0f} s, {STAR_DRIVES} drives",
        ),
        LTO_MODERN: StudyWorkload(
            LTO_MODERN,
            "lto9",
            LTO_DRIVES,
            lto,
            f"lto_modern at scale {settings.lto_scale:g}: {len({r.request for r in lto.rows})} bulk "
            "requests, "
            f"{_files_on(lto)} LTO-9 cartridges over 24 h, {LTO_DRIVES} drives",
        ),
    }


def mix_name(share: float) -> str:
    return f"STAR mix {100 * share:g} % bulk"


def mix_workloads(settings: PolicySettings, stream: StudyWorkload) -> dict[float, StudyWorkload]:
    """The stream with a share of its files moved into three bulk restores, by share."""
    rows = stream.trace.rows
    window_s = max(row.arrival_s for row in rows)
    starts = (0.0, window_s / 3, 2 * window_s / 3)
    mixes = {}
    for share in settings.mix_bulk_shares:
        rng = np.random.default_rng(settings.mix_seed)
        bulk = (rng.random(len(rows)) < share).tolist()
        restore = rng.integers(0, len(starts), size=len(rows)).tolist()
        trace = make_trace(
            (
                dataclasses.replace(row, arrival_s=starts[which]) if in_bulk else row
                for row, in_bulk, which in zip(rows, bulk, restore, strict=True)
            ),
            stream.trace.source,
        )
        moved = sum(bulk)
        mixes[share] = StudyWorkload(
            mix_name(share),
            stream.profile,
            stream.drives,
            trace,
            f"the STAR stream with {moved:,} of its {len(rows):,} files ({100 * share:g} %) in three bulk "
            f"restores at {', '.join(f'{t:,.0f}' for t in starts)} s",
        )
    return mixes


def _files_on(trace: Trace) -> str:
    return f"{trace.paths:,} files on {len({row.tape for row in trace.rows})}"


def depth_options(depth: int) -> dict[str, Any]:
    return {"depth": {"default": depth, "raw": STAR_RAW_DEPTH}}


def _latency(values: Mapping[str, Any], key: str) -> float:
    value = values.get(key)
    return math.nan if value is None else float(value)


def workload_bound(workload: StudyWorkload, drives: int) -> PhysicalBound:
    return physical_bound(workload.trace, TapePhysics(load_profile(workload.profile)), drives)


def run_policy(
    workload: StudyWorkload,
    policy: str,
    drives: int | None = None,
    depth: int | None = None,
    bound: PhysicalBound | None = None,
) -> RunRow:
    """One replay; `depth` (star2006 only) replaces STAR's depth of the DST class; `bound`, when given, is
    the workload's physical bound on these drives (the same for every policy, so worth computing once)."""
    if depth is not None and policy != "star2006":
        raise ValueError(f"a queue depth is star2006's option, not {policy}'s")
    options: Mapping[str, Any] = depth_options(depth) if depth is not None else {}
    count = drives or workload.drives
    result = replay(workload.trace, ReplayConfig(workload.profile, count, policy, options))
    summary = summarise(result, bound)
    latency = summary["latency_s"]
    bound_s = float(summary["physical_bound_s"])
    return RunRow(
        workload=workload.name,
        policy=policy,
        drives=count,
        depth=(depth or STAR_DEPTH) if policy == "star2006" else None,
        files=int(summary["files"]),
        makespan_s=float(summary["makespan_s"]),
        bound_s=bound_s,
        makespan_over_bound=float(summary["makespan_over_bound"] or math.nan),
        throughput_mb_s=float(summary["throughput_bytes_per_s"]) / MB,
        bound_throughput_mb_s=float(summary["bytes"]) / bound_s / MB if bound_s else math.nan,
        mounts=int(summary["mounts"]),
        files_per_mount=float(summary["files_per_mount"]),
        efficiency=float(summary["efficiency"]),
        latency_p50_s=_latency(latency, "p50"),
        latency_p95_s=_latency(latency, "p95"),
        latency_p99_s=_latency(latency, "p99"),
    )


def find(rows: Sequence[RunRow], workload: str, policy: str, drives: int, depth: int | None = None) -> RunRow:
    """The replay of `policy` on `workload`; `depth` is star2006's (None for the other policies)."""
    for row in rows:
        if (row.workload, row.policy, row.drives, row.depth) == (workload, policy, drives, depth):
            return row
    raise KeyError(f"no replay of {policy} on {workload} with {drives} drives, depth {depth}")
