"""A storage device under n concurrent analysis jobs, as a closed queueing network.

Each job alternates between computing and waiting for the device. Per megabyte the job reads it computes for
Z = 1 / r seconds (r: the rate at which it would read if it never waited) and keeps each member disk of the
device busy for a demand D (seconds per MB). Exact mean-value analysis gives the throughput of n jobs; a job's
CPU efficiency is the share of its wall time spent computing, times a ceiling for everything that is neither
CPU nor this device (job set-up, the first stage-in, output upload).

The demand of a member disk per MB read by the jobs:

    (1 - h) x [1/B_read + t_access x s / A]  +  w / B_write

* t_access: time to reposition (seek and rotation on an HDD, flash access on an SSD);
* A: read-ahead memory that the streams a member serves share: each of s streams gets A / s of it, so every
  A / s megabytes the device must move to another stream and pay t_access again. This is why a spinning disk
  falls apart under many streams while one stream reads almost sequentially;
* w: megabytes written per megabyte read (FileStager copies every input file to the scratch disk first);
  B_write is what a device sustains for such writes mixed with reads. For a consumer MLC SSD it is far below
  its sequential rating (erase blocks, read-modify-write) and reads queue behind those writes;
* h: share of the reads the page cache serves from memory.

RAID0 stripes every file over all k members: each member carries 1/k of the bytes and still sees every stream.
RAID1 sends each reading stream to one mirror (so each mirror sees n/k streams and 1/k of the reads) while
every write goes to all mirrors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy.optimize import brentq


class Layout(StrEnum):
    SINGLE = "single"
    RAID0 = "raid0"
    RAID1 = "raid1"


@dataclass(frozen=True)
class Disk:
    """One physical drive."""

    access_s: float
    read_mb_s: float
    write_mb_s: float
    readahead_mb: float


@dataclass(frozen=True)
class Device:
    """What a job's scratch file system sits on: one disk or a software RAID of identical disks."""

    disk: Disk
    layout: Layout = Layout.SINGLE
    members: int = 1

    def __post_init__(self) -> None:
        if self.layout is Layout.SINGLE and self.members != 1:
            raise ValueError("a single-disk device has exactly one member")
        if self.layout is not Layout.SINGLE and self.members < 2:
            raise ValueError(f"a {self.layout} array needs at least two members")


@dataclass(frozen=True)
class Workload:
    """What the jobs ask of the device."""

    read_rate_mb_s: float
    cpu_ceiling: float = 1.0
    written_per_read: float = 0.0
    page_cache_fraction: float = 0.0

    @property
    def think_s_per_mb(self) -> float:
        return 1.0 / self.read_rate_mb_s


def member_demands(device: Device, workload: Workload, streams: float) -> list[float]:
    """Seconds each member disk is busy per megabyte the jobs read, with `streams` jobs reading."""
    disk, k = device.disk, device.members
    from_disk = 1.0 - workload.page_cache_fraction
    write = workload.written_per_read / disk.write_mb_s

    def read(streams_on_member: float) -> float:
        return from_disk * (1.0 / disk.read_mb_s + disk.access_s * streams_on_member / disk.readahead_mb)

    if device.layout is Layout.RAID1:
        return [read(streams / k) / k + write] * k
    # A single disk is the one-member case of striping.
    return [(read(streams) + write) / k] * k


def closed_network_throughput(jobs: int, think_s: float, demands: Sequence[float]) -> float:
    """Exact mean-value analysis: completions per second of `jobs` customers over a delay and queues."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    queue = [0.0] * len(demands)
    throughput = 0.0
    for population in range(1, jobs + 1):
        residence = [demand * (1.0 + waiting) for demand, waiting in zip(demands, queue, strict=True)]
        throughput = population / (think_s + sum(residence))
        queue = [throughput * time for time in residence]
    return throughput


def aggregate_read_rate(device: Device, workload: Workload, jobs: int) -> float:
    """MB/s that `jobs` concurrent jobs read from the device in total."""
    demands = member_demands(device, workload, float(jobs))
    return workload.cpu_ceiling * closed_network_throughput(jobs, workload.think_s_per_mb, demands)


def job_efficiency(device: Device, workload: Workload, jobs: int) -> float:
    """Mean CPU time over wall time of each of `jobs` concurrent jobs."""
    return aggregate_read_rate(device, workload, jobs) * workload.think_s_per_mb / jobs


def saturation_jobs(device: Device, workload: Workload) -> float:
    """The number of jobs a device sustains: where the light-load and saturated asymptotes of the rate cross.

    Kleinrock's saturation point N* = (D_total + Z) / D_max of a closed system, with the demands taken at N*
    itself because they grow with the number of streams.
    """

    def excess(n: float) -> float:
        demands = member_demands(device, workload, n)
        return n - (sum(demands) + workload.think_s_per_mb) / max(demands)

    upper = 2.0
    while excess(upper) < 0.0:
        upper *= 2.0
        if upper > 1e9:
            raise ValueError("the device never saturates under this workload")
    return float(brentq(excess, 1e-9, upper, xtol=1e-9))
