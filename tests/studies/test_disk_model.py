"""The disk model's queueing and physics, checked against closed forms and against each other."""

from __future__ import annotations

import itertools
import math

import pytest

from studies.worker_disks.disk_model import (
    Device,
    Disk,
    Layout,
    Workload,
    aggregate_read_rate,
    closed_network_throughput,
    job_efficiency,
    member_demands,
    saturation_jobs,
)

HDD = Disk(access_s=0.010, read_mb_s=100.0, write_mb_s=100.0, readahead_mb=1.0)
SSD = Disk(access_s=0.0001, read_mb_s=120.0, write_mb_s=20.0, readahead_mb=1.0)


def machine_repairman_throughput(jobs: int, think_s: float, demand_s: float) -> float:
    """Closed form of one exponential server with `jobs` customers thinking for `think_s` on average."""
    ratio = demand_s / think_s
    weights = [math.factorial(jobs) / math.factorial(jobs - k) * ratio**k for k in range(jobs + 1)]
    idle = 1.0 / sum(weights)
    return (1.0 - idle) / demand_s


@pytest.mark.parametrize("jobs", [1, 2, 5, 8, 24])
@pytest.mark.parametrize(("think_s", "demand_s"), [(1.0, 0.1), (0.08, 0.03), (0.5, 0.5)])
def test_mean_value_analysis_matches_the_machine_repairman_closed_form(
    jobs: int, think_s: float, demand_s: float
) -> None:
    assert closed_network_throughput(jobs, think_s, [demand_s]) == pytest.approx(
        machine_repairman_throughput(jobs, think_s, demand_s), rel=1e-9
    )


def test_throughput_never_exceeds_the_bottleneck() -> None:
    demands = [0.02, 0.05]
    for jobs in range(1, 40):
        assert closed_network_throughput(jobs, 0.1, demands) <= 1.0 / max(demands) + 1e-12


def test_closed_network_needs_a_job() -> None:
    with pytest.raises(ValueError, match="jobs"):
        closed_network_throughput(0, 1.0, [0.1])


def test_read_ahead_shared_between_streams_makes_seeks_grow_with_streams() -> None:
    workload = Workload(read_rate_mb_s=5.0)
    one, eight = member_demands(Device(HDD), workload, 1.0)[0], member_demands(Device(HDD), workload, 8.0)[0]
    assert eight - one == pytest.approx(HDD.access_s * 7 / HDD.readahead_mb)


def test_a_single_hdd_rate_peaks_then_falls_while_an_ssd_keeps_rising() -> None:
    workload = Workload(read_rate_mb_s=12.5)
    hdd = [aggregate_read_rate(Device(HDD), workload, n) for n in range(1, 9)]
    ssd = [aggregate_read_rate(Device(SSD), workload, n) for n in range(1, 9)]
    peak = hdd.index(max(hdd))
    assert 0 < peak < 7
    assert hdd[-1] < hdd[peak]
    assert all(later > earlier for earlier, later in itertools.pairwise(ssd))


def test_raid0_members_carry_a_share_of_the_bytes_and_see_every_stream() -> None:
    workload = Workload(read_rate_mb_s=5.0, written_per_read=1.0)
    single = member_demands(Device(HDD), workload, 8.0)[0]
    striped = member_demands(Device(HDD, Layout.RAID0, 2), workload, 8.0)
    assert striped == pytest.approx([single / 2, single / 2])


def test_raid1_splits_readers_between_mirrors_but_writes_every_mirror() -> None:
    reads_only = member_demands(Device(HDD, Layout.RAID1, 2), Workload(read_rate_mb_s=5.0), 8.0)
    with_writes = member_demands(
        Device(HDD, Layout.RAID1, 2), Workload(read_rate_mb_s=5.0, written_per_read=1.0), 8.0
    )
    assert reads_only[0] == pytest.approx((1 / HDD.read_mb_s + HDD.access_s * 4 / HDD.readahead_mb) / 2)
    assert with_writes[0] - reads_only[0] == pytest.approx(1.0 / HDD.write_mb_s)


def test_more_disks_and_page_cache_both_raise_efficiency() -> None:
    workload = Workload(read_rate_mb_s=2.0, cpu_ceiling=0.95, written_per_read=1.0)
    cached = Workload(read_rate_mb_s=2.0, cpu_ceiling=0.95, written_per_read=1.0, page_cache_fraction=0.8)
    single = job_efficiency(Device(HDD), workload, 8)
    assert job_efficiency(Device(HDD, Layout.RAID0, 2), workload, 8) > single
    assert job_efficiency(Device(HDD, Layout.RAID1, 2), workload, 8) > single
    assert job_efficiency(Device(HDD), cached, 8) > single
    assert single < 0.95


def test_slow_ssd_writes_hurt_under_filestager_but_not_read_only() -> None:
    slow = Device(Disk(SSD.access_s, SSD.read_mb_s, 5.0, SSD.readahead_mb))
    staging = Workload(read_rate_mb_s=2.0, written_per_read=1.0)
    reading = Workload(read_rate_mb_s=2.0)
    assert job_efficiency(slow, staging, 8) < job_efficiency(Device(SSD), staging, 8)
    assert job_efficiency(slow, reading, 8) == pytest.approx(job_efficiency(Device(SSD), reading, 8))


def test_saturation_point_without_stream_effects_is_kleinrocks() -> None:
    flat = Disk(access_s=0.0, read_mb_s=50.0, write_mb_s=50.0, readahead_mb=1.0)
    workload = Workload(read_rate_mb_s=10.0)
    demand = 1.0 / 50.0
    assert saturation_jobs(Device(flat), workload) == pytest.approx((demand + 0.1) / demand)


def test_saturation_falls_with_the_read_rate_per_job() -> None:
    assert saturation_jobs(Device(HDD), Workload(read_rate_mb_s=15.0)) < saturation_jobs(
        Device(HDD), Workload(read_rate_mb_s=10.0)
    )


def test_efficiency_with_no_waiting_is_the_cpu_ceiling() -> None:
    instant = Disk(access_s=0.0, read_mb_s=1e12, write_mb_s=1e12, readahead_mb=1.0)
    assert job_efficiency(Device(instant), Workload(read_rate_mb_s=5.0, cpu_ceiling=0.9), 8) == pytest.approx(
        0.9
    )


@pytest.mark.parametrize(("layout", "members"), [(Layout.SINGLE, 2), (Layout.RAID0, 1), (Layout.RAID1, 1)])
def test_device_rejects_impossible_member_counts(layout: Layout, members: int) -> None:
    with pytest.raises(ValueError, match="member"):
        Device(HDD, layout, members)
