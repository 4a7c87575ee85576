"""The replays behind the buffer-size study: a bulk campaign, one replay per buffer size, one row each.

The campaign: `files` files of `file_bytes` spread evenly over `tapes` cartridges, all asked for at once (a
bulk restore, as the ATLAS Data Carousel stages a dataset); its clients process and release each file
`hold_s` after it is staged. The buffer is sized in hours of the drives' streaming rate (drives x native
rate), the unit a site plans in. The replay models the buffer (accounting only: no bytes are written).
"""

from __future__ import annotations

from dataclasses import dataclass

from carousel.domain.buffer import BufferLimits
from carousel.domain.states import FileState
from carousel.replay.driver import EPOCH, ReplayConfig, ReplayResult, replay
from carousel.replay.trace import Trace, TraceRow, make_trace
from hsm_adapters.simulated.profiles import load_profile

GB = 10**9


@dataclass(frozen=True)
class BufferSettings:
    profile: str = "lto8"
    drives: int = 2
    policy: str = "carousel"
    tapes: int = 24
    files: int = 2_400
    file_bytes: int = 4 * GB
    hold_s: float = 1_800.0  # clients release each file this long after it is staged
    cycle_interval_s: float = 10.0
    # buffer sizes, in hours of the drives' streaming rate; the unlimited run comes first and sets the scale
    buffer_hours: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0, 1.5, 2.0)
    high_watermark: float = 0.95
    low_watermark: float = 0.85

    def streaming_bytes_per_s(self) -> float:
        return self.drives * load_profile(self.profile).rate_bytes_per_s

    def buffer_bytes(self, hours: float) -> int:
        return int(hours * 3600 * self.streaming_bytes_per_s())


@dataclass(frozen=True)
class BufferRun:
    buffer_hours: float | None  # None: no buffer limit
    buffer_bytes: int | None
    makespan_s: float
    throughput_bytes_per_s: float
    mounts: int
    files_per_mount: float
    stage_latency_s: float  # mean time from hand-over to staged: how long a file's bytes are reserved
    peak_on_disk_bytes: int | None
    failed: int

    def little_bytes(self, hold_s: float) -> float:
        """Little's law: bytes in the buffer = throughput x (time reserved before landing + time held)."""
        return self.throughput_bytes_per_s * (self.stage_latency_s + hold_s)


def campaign(settings: BufferSettings) -> Trace:
    per_tape = -(-settings.files // settings.tapes)
    rows = [
        TraceRow(
            0.0,
            "campaign",
            f"/campaign/{n:05d}",
            settings.file_bytes,
            f"C{n % settings.tapes:03d}",
            (n // settings.tapes) * settings.file_bytes,
        )
        for n in range(settings.files)
    ]
    assert per_tape * settings.file_bytes <= load_profile(settings.profile).capacity_bytes
    return make_trace(rows, "bulk campaign")


def run_one(settings: BufferSettings, trace: Trace, hours: float | None) -> BufferRun:
    limits = (
        None
        if hours is None
        else BufferLimits(settings.buffer_bytes(hours), settings.high_watermark, settings.low_watermark)
    )
    config = ReplayConfig(
        profile=settings.profile,
        drives=settings.drives,
        policy=settings.policy,
        cycle_interval_s=settings.cycle_interval_s,
        buffer=limits,
        release_after_s=settings.hold_s,
    )
    return measure(replay(trace, config), hours, limits)


def measure(result: ReplayResult, hours: float | None, limits: BufferLimits | None) -> BufferRun:
    store = result.store
    staged = [f for f in store.files if f.state is FileState.STAGED]
    ends = [o.end for o in store.rows if o.end is not None]
    makespan = (max(ends, default=EPOCH) - EPOCH).total_seconds()
    latencies = [
        (f.ended_at - f.submitted_at).total_seconds()
        for f in staged
        if f.submitted_at is not None and f.ended_at is not None
    ]
    mounts = len(store.mounts)
    return BufferRun(
        buffer_hours=hours,
        buffer_bytes=None if limits is None else limits.capacity_bytes,
        makespan_s=makespan,
        throughput_bytes_per_s=sum(f.size for f in staged) / makespan if makespan else 0.0,
        mounts=mounts,
        files_per_mount=len(staged) / mounts if mounts else 0.0,
        stage_latency_s=sum(latencies) / len(latencies) if latencies else 0.0,
        peak_on_disk_bytes=None if store.buffer is None else store.buffer.peak_on_disk_bytes,
        failed=sum(1 for f in store.files if f.state is FileState.FAILED),
    )
