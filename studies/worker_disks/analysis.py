"""The worker-node disk study's numbers: the fit, the checks against data it did not see, and the holdouts.

Fitted: the FileStager efficiencies of seed 000's table. Checked without refitting: the raw FileStager runs of
seed 001. Held out: the long-term efficiencies of seed 000 and the BNL saturation statements of seed 002.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studies.worker_disks.data import HammerCloudRow, WorkerDiskData, half_unit_of_last_place
from studies.worker_disks.disk_fit import (
    FitResult,
    FixedPhysics,
    ModelParameters,
    Observation,
    device_for,
    filestager_workload,
    fit_model,
    predicted_efficiency,
    rms,
)
from studies.worker_disks.disk_model import Workload, aggregate_read_rate, job_efficiency, saturation_jobs

FIT_TABLE = "primaryresults"
FIT_DOCUMENT = "000_5f99fa0da61b6dda.txt"
RAW_RUNS_DOCUMENT = "001_f186e70e6529aa00.txt"
BNL_DEVICES = ("hdd", "raid0_3hdd", "ssd_mtron")
# The Glasgow job read rates (MB/s, log-spaced) at which the fit is repeated to show what the data fix.
PROFILE_LOWEST_MB_S, PROFILE_HIGHEST_MB_S, PROFILE_POINTS = 0.3, 5.0, 13


def _observation(row: HammerCloudRow) -> Observation:
    if row.efficiency is None:
        raise ValueError(f"{row.source}: {row.storage} {row.cores}:{row.jobs} has no efficiency")
    return Observation(row.storage, row.cores, row.jobs, row.efficiency, row.source)


def fit_observations(data: WorkerDiskData) -> list[Observation]:
    return [
        _observation(row)
        for row in data.hammercloud
        if row.document == FIT_DOCUMENT and row.table == FIT_TABLE and row.access == "filestager"
    ]


def raw_run_observations(data: WorkerDiskData) -> list[Observation]:
    return [
        _observation(row)
        for row in data.hammercloud
        if row.document == RAW_RUNS_DOCUMENT and row.access == "filestager" and row.efficiency is not None
    ]


def repeat_scatter(fitted: list[Observation], raw: list[Observation]) -> float:
    """RMS difference between the paper's and the raw runs' efficiency for the same configuration.

    Two statements of one HammerCloud configuration differ by this much; a prediction of a different
    measurement of that configuration cannot be asked to agree better.
    """
    differences = [
        paper.efficiency - run.efficiency
        for paper in fitted
        for run in raw
        if (paper.storage, paper.cores, paper.jobs) == (run.storage, run.cores, run.jobs)
    ]
    if not differences:
        raise ValueError("no configuration is measured in both documents")
    return rms(differences)


@dataclass(frozen=True)
class Prediction:
    observation: Observation
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted - self.observation.efficiency


def predict(observations: list[Observation], fit: FitResult, physics: FixedPhysics) -> tuple[Prediction, ...]:
    return tuple(
        Prediction(observation, predicted_efficiency(observation, fit.parameters, physics))
        for observation in observations
    )


@dataclass(frozen=True)
class BnlPrediction:
    """The BNL single-node tests (read-only, caches dropped) predicted at one per-worker read rate."""

    worker_read_rate_mb_s: float
    cores: int
    saturation: dict[str, float]  # workers sustained (saturation point) per device, not capped by cores
    rate_peak_workers: dict[str, int]  # worker count of the highest aggregate rate, within the cores
    rates: dict[str, tuple[float, ...]]  # aggregate MB/s for 1..cores workers
    ssd_over_hdd_full_load: float


def bnl_workload(worker_read_rate_mb_s: float) -> Workload:
    # Data placed beforehand and nodes rebooted before each test: no writes, no page cache. Rates, not
    # efficiencies, are compared, so the CPU ceiling of Glasgow's jobs does not apply.
    return Workload(read_rate_mb_s=worker_read_rate_mb_s)


def predict_bnl(
    parameters: ModelParameters, physics: FixedPhysics, worker_read_rate_mb_s: float, cores: int
) -> BnlPrediction:
    workload = bnl_workload(worker_read_rate_mb_s)
    devices = {storage: device_for(storage, parameters, physics) for storage in BNL_DEVICES}
    rates = {
        storage: tuple(aggregate_read_rate(device, workload, n) for n in range(1, cores + 1))
        for storage, device in devices.items()
    }
    return BnlPrediction(
        worker_read_rate_mb_s=worker_read_rate_mb_s,
        cores=cores,
        saturation={storage: saturation_jobs(device, workload) for storage, device in devices.items()},
        rate_peak_workers={storage: int(np.argmax(curve)) + 1 for storage, curve in rates.items()},
        rates=rates,
        ssd_over_hdd_full_load=rates["ssd_mtron"][-1] / rates["hdd"][-1],
    )


@dataclass(frozen=True)
class ProfilePoint:
    """The fit with the Glasgow job read rate pinned, and what it then predicts for BNL."""

    job_read_rate_mb_s: float
    fit: FitResult
    bnl: BnlPrediction


@dataclass(frozen=True)
class WorkerDiskAnalysis:
    physics: FixedPhysics
    fit: FitResult
    raw_runs: tuple[Prediction, ...]
    raw_runs_rms: float
    repeat_scatter: float
    longterm: tuple[Prediction, ...]
    bnl: tuple[BnlPrediction, ...]  # at the low, middle and high per-worker read rate BNL states
    profile: tuple[ProfilePoint, ...]

    @property
    def bnl_mid(self) -> BnlPrediction:
        return self.bnl[len(self.bnl) // 2]


def bnl_read_rates(data: WorkerDiskData) -> tuple[float, float, float]:
    stated = data.bnl_statement("worker_read_rate", workload="proof")
    return stated.low, (stated.low + stated.high) / 2.0, stated.high


def bnl_cores(data: WorkerDiskData) -> int:
    return int(data.bnl_statement("cores_per_node").low)


def profile_read_rates() -> tuple[float, ...]:
    return tuple(
        float(rate) for rate in np.geomspace(PROFILE_LOWEST_MB_S, PROFILE_HIGHEST_MB_S, PROFILE_POINTS)
    )


def analyse(data: WorkerDiskData) -> WorkerDiskAnalysis:
    physics = FixedPhysics.from_documents(data)
    fitted = fit_observations(data)
    fit = fit_model(fitted, physics)
    raw = raw_run_observations(data)
    raw_predictions = predict(raw, fit, physics)
    longterm = tuple(
        Prediction(
            Observation(row.storage, row.cores, row.cores, row.efficiency, row.source),
            job_efficiency(
                device_for(row.storage, fit.parameters, physics),
                filestager_workload(fit.parameters, row.cores),
                row.cores,
            ),
        )
        for row in data.longterm
    )
    cores = bnl_cores(data)
    rates = bnl_read_rates(data)
    profile = []
    for job_rate in profile_read_rates():
        pinned = fit_model(fitted, physics, job_read_rate_mb_s=job_rate)
        profile.append(
            ProfilePoint(job_rate, pinned, predict_bnl(pinned.parameters, physics, rates[1], cores))
        )
    return WorkerDiskAnalysis(
        physics=physics,
        fit=fit,
        raw_runs=raw_predictions,
        raw_runs_rms=rms([prediction.error for prediction in raw_predictions]),
        repeat_scatter=repeat_scatter(fitted, raw),
        longterm=longterm,
        bnl=tuple(predict_bnl(fit.parameters, physics, rate, cores) for rate in rates),
        profile=tuple(profile),
    )


def fit_predictions(analysis: WorkerDiskAnalysis) -> tuple[Prediction, ...]:
    fit = analysis.fit
    return tuple(Prediction(o, p) for o, p in zip(fit.observations, fit.predicted, strict=True))


def efficiency_curve(analysis: WorkerDiskAnalysis, storage: str, cores: int) -> list[float]:
    """Model job efficiency of `storage` under FileStager for 1..cores concurrent jobs on a `cores` node."""
    device = device_for(storage, analysis.fit.parameters, analysis.physics)
    workload = filestager_workload(analysis.fit.parameters, cores)
    return [job_efficiency(device, workload, n) for n in range(1, cores + 1)]


def throughput_inconsistencies(data: WorkerDiskData) -> list[tuple[HammerCloudRow, float]]:
    """Rows whose throughput is not jobs x efficiency, allowing for the rounding of both printed figures."""
    return [
        (row, row.jobs * row.efficiency)
        for row in data.hammercloud
        if row.efficiency is not None
        and row.throughput is not None
        and abs(row.throughput - row.jobs * row.efficiency)
        > row.jobs * half_unit_of_last_place(row.efficiency_text)
        + half_unit_of_last_place(row.throughput_text)
    ]
