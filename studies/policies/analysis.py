"""The policy study's replays and what is read off them: the policies side by side, the depth and drive
sweeps, and the gain from grouping by tape.

Depth effect: how far throughput (and median latency) moves from its value at STAR's depth of 30 as the
HSM-side depth of the STAR policy changes, over the depths from about the drive count up. Grouping gain:
star2006's throughput over fifo's on the same workload (fifo: the same requests handed over one file at a
time in arrival order, as an HSM without the DataCarousel in front receives them).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from itertools import pairwise

from carousel.replay.bound import PhysicalBound
from studies.policies.runs import (
    LTO_MODERN,
    POLICIES,
    STAR_BATCH,
    STAR_DEPTH,
    STAR_DRIVES,
    STAR_STREAM,
    PolicySettings,
    RunRow,
    StudyWorkload,
    find,
    mix_workloads,
    run_policy,
    study_workloads,
    workload_bound,
)
from studies.result import Progress, no_progress

DEPTH_WORKLOADS = (STAR_BATCH, STAR_STREAM)
DRIVE_WORKLOAD = STAR_BATCH
GROUPING_WORKLOADS = (STAR_STREAM, STAR_BATCH)
GROUPING_POLICIES = ("fifo", "star2006")  # STAR's configuration without and with grouping by tape


@dataclass(frozen=True)
class Job:
    workload: str
    policy: str
    drives: int | None = None  # None: the workload's
    depth: int | None = None  # None: STAR's (star2006) or none

    def describe(self) -> str:
        extra = []
        if self.drives is not None:
            extra.append(f"{self.drives} drives")
        if self.depth is not None:
            extra.append(f"depth {self.depth}")
        return f"{self.workload}: {self.policy}" + (f" ({', '.join(extra)})" if extra else "")


def plan_jobs(
    settings: PolicySettings,
    workloads: Mapping[str, StudyWorkload],
    mixes: Mapping[float, StudyWorkload],
) -> list[Job]:
    jobs = [Job(name, policy) for name in workloads for policy in POLICIES]
    jobs += [Job(mix.name, policy) for mix in mixes.values() for policy in GROUPING_POLICIES]
    jobs += [
        Job(name, "star2006", depth=depth)
        for name in DEPTH_WORKLOADS
        for depth in settings.depths
        if depth != STAR_DEPTH
    ]
    default_drives = workloads[DRIVE_WORKLOAD].drives
    jobs += [
        Job(DRIVE_WORKLOAD, policy, drives=count)
        for count in settings.drive_counts
        if count != default_drives
        for policy in POLICIES
    ]
    return jobs


@dataclass(frozen=True)
class DepthEffect:
    """Over the depths of the claim (>= settings.depth_claim_from), the largest change from depth 30, in %."""

    workload: str
    depths: tuple[int, ...]
    throughput_change_percent: float
    latency_p50_change_percent: float
    # over the whole sweep, the smallest depth included
    throughput_change_all_percent: float
    latency_p50_change_all_percent: float


@dataclass(frozen=True)
class GroupingGain:
    workload: str
    without: RunRow  # fifo
    grouped: RunRow  # star2006 at STAR's depth

    @property
    def gain_percent(self) -> float:
        return 100.0 * (self.grouped.throughput_mb_s / self.without.throughput_mb_s - 1.0)


@dataclass(frozen=True)
class PolicyAnalysis:
    settings: PolicySettings
    workloads: Mapping[str, StudyWorkload]
    mixes: Mapping[float, StudyWorkload]  # by share of files in bulk restores
    rows: tuple[RunRow, ...]

    def grouping_by_share(self) -> list[tuple[float, GroupingGain]]:
        """The gain from grouping against the share of bulk restores: the stream (0) and each mix."""
        gains = [(0.0, self.grouping_gain(STAR_STREAM))]
        gains += [(share, self.grouping_gain(mix.name)) for share, mix in sorted(self.mixes.items())]
        return gains

    def share_for_gain(self, gain_percent: float) -> float | None:
        """The bulk share at which the gain first reaches `gain_percent` (linear between the mixes)."""
        points = self.grouping_by_share()
        for (low_share, low), (high_share, high) in pairwise(points):
            if low.gain_percent < gain_percent <= high.gain_percent:
                fraction = (gain_percent - low.gain_percent) / (high.gain_percent - low.gain_percent)
                return low_share + fraction * (high_share - low_share)
        return None

    def side_by_side(self, workload: str) -> list[RunRow]:
        drives = self.workloads[workload].drives
        return [find(self.rows, workload, policy, drives, self._default_depth(policy)) for policy in POLICIES]

    def depth_sweep(self, workload: str) -> list[RunRow]:
        drives = self.workloads[workload].drives
        return [find(self.rows, workload, "star2006", drives, depth) for depth in self.settings.depths]

    def drive_sweep(self, policy: str) -> list[RunRow]:
        return [
            find(self.rows, DRIVE_WORKLOAD, policy, count, self._default_depth(policy))
            for count in self.settings.drive_counts
        ]

    def depth_effect(self, workload: str) -> DepthEffect:
        sweep = self.depth_sweep(workload)
        base = next(row for row in sweep if row.depth == STAR_DEPTH)
        claim = [r for r in sweep if r.depth is not None and r.depth >= self.settings.depth_claim_from]

        def largest(rows: Sequence[RunRow], value: str) -> float:
            reference = float(getattr(base, value))
            return max(abs(float(getattr(r, value)) / reference - 1.0) for r in rows) * 100.0

        return DepthEffect(
            workload=workload,
            depths=tuple(r.depth or 0 for r in claim),
            throughput_change_percent=largest(claim, "throughput_mb_s"),
            latency_p50_change_percent=largest(claim, "latency_p50_s"),
            throughput_change_all_percent=largest(sweep, "throughput_mb_s"),
            latency_p50_change_all_percent=largest(sweep, "latency_p50_s"),
        )

    def grouping_gain(self, workload: str) -> GroupingGain:
        drives = self._workload(workload).drives
        return GroupingGain(
            workload,
            find(self.rows, workload, "fifo", drives),
            find(self.rows, workload, "star2006", drives, STAR_DEPTH),
        )

    def _workload(self, name: str) -> StudyWorkload:
        found = self.workloads.get(name) or next((m for m in self.mixes.values() if m.name == name), None)
        if found is None:
            raise KeyError(f"no workload {name!r} in the study")
        return found

    @staticmethod
    def _default_depth(policy: str) -> int | None:
        return STAR_DEPTH if policy == "star2006" else None


def _run_job(workload: StudyWorkload, job: Job, bound: PhysicalBound) -> RunRow:
    return run_policy(workload, job.policy, job.drives, job.depth, bound)


def analyse_policies(
    settings: PolicySettings,
    progress: Progress = no_progress,
    first_step: int = 0,
    total_steps: int | None = None,
) -> PolicyAnalysis:
    """Runs every replay of the study, telling `progress` as each ends (steps counted from `first_step`).

    Replays are independent and deterministic, so with `settings.workers` > 1 they run in that many forked
    processes; the rows come back in the jobs' order either way.
    """
    main = study_workloads(settings)
    mixes = mix_workloads(settings, main[STAR_STREAM])
    workloads = {**main, **{mix.name: mix for mix in mixes.values()}}
    jobs = plan_jobs(settings, main, mixes)
    total = total_steps if total_steps is not None else first_step + len(jobs)
    bounds = {
        key: workload_bound(workloads[key[0]], key[1])
        for key in {(job.workload, job.drives or workloads[job.workload].drives) for job in jobs}
    }

    def bound(job: Job) -> PhysicalBound:
        return bounds[job.workload, job.drives or workloads[job.workload].drives]

    rows: list[RunRow | None] = [None] * len(jobs)
    if settings.workers <= 1:
        for index, job in enumerate(jobs):
            progress(f"replaying {job.describe()}", first_step + index, total)
            rows[index] = _run_job(workloads[job.workload], job, bound(job))
    else:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=settings.workers, mp_context=context) as pool:
            pending = {
                pool.submit(_run_job, workloads[job.workload], job, bound(job)): index
                for index, job in enumerate(jobs)
            }
            for done, future in enumerate(as_completed(pending), start=1):
                index = pending[future]
                rows[index] = future.result()
                progress(f"replayed {jobs[index].describe()}", first_step + done, total)
    return PolicyAnalysis(settings, main, mixes, tuple(row for row in rows if row is not None))


def replay_count(settings: PolicySettings) -> int:
    """How many replays `analyse_policies` runs (without building the workloads)."""
    extra_depths = len([d for d in settings.depths if d != STAR_DEPTH])
    extra_drives = len([c for c in settings.drive_counts if c != STAR_DRIVES])
    workloads = (STAR_BATCH, STAR_STREAM, LTO_MODERN)
    return (
        len(workloads) * len(POLICIES)
        + len(settings.mix_bulk_shares) * len(GROUPING_POLICIES)
        + len(DEPTH_WORKLOADS) * extra_depths
        + extra_drives * len(POLICIES)
    )
