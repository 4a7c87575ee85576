"""The worker-node devices of the Glasgow and BNL tests in terms of the disk model, and the least-squares fit.

Fixed physics comes from the documents where they state it (access times and SSD read rate on the BNL slides);
the rest is fitted on the HammerCloud FileStager efficiencies.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from scipy.optimize import least_squares

from studies.worker_disks.data import WorkerDiskData
from studies.worker_disks.disk_model import Device, Disk, Layout, Workload, job_efficiency

# A 7200 rpm SATA disk of 2009-2010 streams about this much; no source document states it, and the fit
# barely depends on it because the disks in these tests are bound by repositioning, not by transfer.
HDD_SEQUENTIAL_MB_S = 100.0
# FileStager copies each input file once to scratch before the job reads it once.
FILESTAGER_WRITTEN_PER_READ = 1.0
# Nodes with more cores than this in the Glasgow tests are the one 24-core (Magny-Cours) node.
EIGHT_CORE_NODE = 8


@dataclass(frozen=True)
class FixedPhysics:
    """Device figures that are not fitted."""

    hdd_access_s: float
    ssd_access_s: float
    ssd_read_mb_s: float
    mtron_write_mb_s: float
    hdd_mb_s: float = HDD_SEQUENTIAL_MB_S

    @classmethod
    def from_documents(cls, data: WorkerDiskData) -> FixedPhysics:
        ms = 1e-3
        return cls(
            hdd_access_s=data.bnl_statement("access_time", "hdd").low * ms,
            ssd_access_s=data.bnl_statement("access_time", "ssd_mtron").low * ms,
            ssd_read_mb_s=data.bnl_statement("sustained_read", "ssd_mtron").low,
            mtron_write_mb_s=data.bnl_statement("sustained_write", "ssd_mtron").low,
        )


@dataclass(frozen=True)
class ModelParameters:
    """The fitted parameters, each a physical quantity."""

    cpu_ceiling: float  # CPU time / wall time of a job with an infinitely fast device
    job_read_rate_mb_s: float  # what one Glasgow analysis job reads per second of CPU
    readahead_mb: float  # read-ahead memory a disk shares among the streams it serves
    intel_write_mb_s: float  # sustained FileStager write rate of the Intel X25-M under mixed load
    kingston_write_mb_s: float  # the same for the Kingston V-series
    node24_page_cache_fraction: float  # share of reads the 24-core node serves from its page cache

    def as_vector(self) -> list[float]:
        return [getattr(self, field.name) for field in fields(self)]

    @classmethod
    def from_vector(cls, vector: Sequence[float]) -> ModelParameters:
        return cls(*(float(value) for value in vector))


PARAMETER_NAMES = tuple(field.name for field in fields(ModelParameters))
PARAMETER_UNITS = ("fraction", "MB/s", "MB", "MB/s", "MB/s", "fraction")
LOWER_BOUNDS = ModelParameters(0.5, 0.05, 0.01, 0.1, 0.1, 0.0)
UPPER_BOUNDS = ModelParameters(1.0, 50.0, 1000.0, 1000.0, 1000.0, 0.99)


def device_for(storage: str, parameters: ModelParameters, physics: FixedPhysics) -> Device:
    """The device behind one storage configuration of the documents."""
    hdd = Disk(physics.hdd_access_s, physics.hdd_mb_s, physics.hdd_mb_s, parameters.readahead_mb)

    def ssd(write_mb_s: float) -> Disk:
        return Disk(physics.ssd_access_s, physics.ssd_read_mb_s, write_mb_s, parameters.readahead_mb)

    devices = {
        "hdd": Device(hdd),
        "raid0_2hdd": Device(hdd, Layout.RAID0, 2),
        "raid1_2hdd": Device(hdd, Layout.RAID1, 2),
        "raid0_3hdd": Device(hdd, Layout.RAID0, 3),
        "ssd_intel": Device(ssd(parameters.intel_write_mb_s)),
        "ssd_kingston": Device(ssd(parameters.kingston_write_mb_s)),
        "ssd_mtron": Device(ssd(physics.mtron_write_mb_s)),
        "raid0_2ssd": Device(ssd(physics.mtron_write_mb_s), Layout.RAID0, 2),
    }
    if storage not in devices:
        raise ValueError(f"no device model for storage {storage!r}")
    return devices[storage]


def filestager_workload(parameters: ModelParameters, cores: int) -> Workload:
    """Glasgow HammerCloud analysis jobs that stage their inputs onto the device being tested."""
    return Workload(
        read_rate_mb_s=parameters.job_read_rate_mb_s,
        cpu_ceiling=parameters.cpu_ceiling,
        written_per_read=FILESTAGER_WRITTEN_PER_READ,
        page_cache_fraction=parameters.node24_page_cache_fraction if cores > EIGHT_CORE_NODE else 0.0,
    )


@dataclass(frozen=True)
class Observation:
    """A measured mean job efficiency of one configuration."""

    storage: str
    cores: int
    jobs: int
    efficiency: float
    source: str

    @property
    def label(self) -> str:
        return f"{self.storage} {self.cores}:{self.jobs}"


def predicted_efficiency(
    observation: Observation, parameters: ModelParameters, physics: FixedPhysics
) -> float:
    device = device_for(observation.storage, parameters, physics)
    return job_efficiency(device, filestager_workload(parameters, observation.cores), observation.jobs)


def rms(residuals: Sequence[float]) -> float:
    return math.sqrt(sum(value * value for value in residuals) / len(residuals))


@dataclass(frozen=True)
class FitResult:
    parameters: ModelParameters
    observations: tuple[Observation, ...]
    predicted: tuple[float, ...]
    residuals: tuple[float, ...]  # model - measured, as fractions
    rms: float  # as a fraction
    parameters_at_bounds: tuple[str, ...]


# Starting points spread over decades, so that the best of the local minima is found whatever the scale.
_READ_RATE_STARTS = (0.5, 2.0, 8.0)
_READAHEAD_STARTS = (0.3, 3.0, 30.0)


def fit_model(
    observations: Sequence[Observation], physics: FixedPhysics, *, job_read_rate_mb_s: float | None = None
) -> FitResult:
    """Least-squares fit of the parameters on efficiencies; `job_read_rate_mb_s` pins that one parameter."""
    if not observations:
        raise ValueError("no observations to fit")
    pinned = job_read_rate_mb_s is not None
    free = [name for name in PARAMETER_NAMES if not (pinned and name == "job_read_rate_mb_s")]
    lower = [getattr(LOWER_BOUNDS, name) for name in free]
    upper = [getattr(UPPER_BOUNDS, name) for name in free]

    def parameters_of(vector: Sequence[float]) -> ModelParameters:
        values = dict(zip(free, vector, strict=True))
        if job_read_rate_mb_s is not None:
            values["job_read_rate_mb_s"] = job_read_rate_mb_s
        return ModelParameters(**{name: float(values[name]) for name in PARAMETER_NAMES})

    def residuals(vector: Sequence[float]) -> list[float]:
        parameters = parameters_of(vector)
        return [
            predicted_efficiency(observation, parameters, physics) - observation.efficiency
            for observation in observations
        ]

    read_rates = (job_read_rate_mb_s,) if pinned else _READ_RATE_STARTS
    best = None
    for read_rate, readahead in itertools.product(read_rates, _READAHEAD_STARTS):
        start = ModelParameters(0.9, float(read_rate or 1.0), readahead, 30.0, 10.0, 0.5)
        x0 = [getattr(start, name) for name in free]
        solution = least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac")
        if best is None or solution.cost < best.cost:
            best = solution
    assert best is not None  # the loop runs at least once
    parameters = parameters_of(best.x)
    predicted = tuple(predicted_efficiency(o, parameters, physics) for o in observations)
    errors = tuple(p - o.efficiency for p, o in zip(predicted, observations, strict=True))
    at_bounds = tuple(
        name
        for name, value, low, high in zip(free, best.x, lower, upper, strict=True)
        if np.isclose(value, low, rtol=1e-4) or np.isclose(value, high, rtol=1e-4)
    )
    return FitResult(parameters, tuple(observations), predicted, errors, rms(errors), at_bounds)
