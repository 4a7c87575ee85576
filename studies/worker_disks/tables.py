"""The CSV tables behind the worker-node disk study's figures and numbers."""

from __future__ import annotations

from pathlib import Path

from studies.result import write_csv
from studies.worker_disks.analysis import (
    BNL_DEVICES,
    WorkerDiskAnalysis,
    efficiency_curve,
    fit_predictions,
    throughput_inconsistencies,
)
from studies.worker_disks.data import WorkerDiskData
from studies.worker_disks.disk_fit import PARAMETER_NAMES, PARAMETER_UNITS
from studies.worker_disks.price_performance import PricePerformance

PARAMETER_MEANINGS = {
    "cpu_ceiling": "CPU time / wall time of a job with an infinitely fast device",
    "job_read_rate_mb_s": "MB one Glasgow analysis job reads per second of CPU",
    "readahead_mb": "read-ahead memory a disk shares among its streams (each gets A/streams)",
    "intel_write_mb_s": "Intel X25-M write rate sustained under FileStager's mixed load",
    "kingston_write_mb_s": "Kingston V-series write rate sustained under FileStager's mixed load",
    "node24_page_cache_fraction": "share of reads the 24-core node serves from its page cache",
}


def _pct(value: float) -> float:
    return 100.0 * value


def write_tables(
    out_dir: Path, data: WorkerDiskData, analysis: WorkerDiskAnalysis, table: tuple[PricePerformance, ...]
) -> list[Path]:
    fit = analysis.fit
    prediction_columns = (
        "group",
        "storage",
        "cores",
        "jobs",
        "source",
        "published_pct",
        "model_pct",
        "error_pts",
    )
    prediction_rows = [
        (
            group,
            p.observation.storage,
            p.observation.cores,
            p.observation.jobs,
            p.observation.source,
            _pct(p.observation.efficiency),
            _pct(p.predicted),
            _pct(p.error),
        )
        for group, predictions in (
            ("fitted", fit_predictions(analysis)),
            ("checked", analysis.raw_runs),
            ("held out", analysis.longterm),
        )
        for p in predictions
    ]
    curves = [
        (storage, cores, jobs, _pct(value))
        for storage, cores in (
            *((storage, 8) for storage in ("hdd", "raid1_2hdd", "raid0_2hdd", "ssd_intel", "ssd_kingston")),
            ("raid0_2hdd", 24),
            ("ssd_intel", 24),
        )
        for jobs, value in enumerate(efficiency_curve(analysis, storage, cores), start=1)
    ]
    bnl_rates = [
        (prediction.worker_read_rate_mb_s, storage, workers, rate)
        for prediction in analysis.bnl
        for storage, curve in prediction.rates.items()
        for workers, rate in enumerate(curve, start=1)
    ]
    bnl_summary = [
        (
            prediction.worker_read_rate_mb_s,
            storage,
            prediction.saturation[storage],
            prediction.rate_peak_workers[storage],
            prediction.ssd_over_hdd_full_load,
        )
        for prediction in analysis.bnl
        for storage in BNL_DEVICES
    ]
    other_parameters = [name for name in PARAMETER_NAMES if name != "job_read_rate_mb_s"]
    profile = [
        (
            point.job_read_rate_mb_s,
            _pct(point.fit.rms),
            *(getattr(point.fit.parameters, name) for name in other_parameters),
            *(point.bnl.saturation[s] for s in BNL_DEVICES),
            point.bnl.ssd_over_hdd_full_load,
        )
        for point in analysis.profile
    ]
    inconsistent = throughput_inconsistencies(data)
    return [
        write_csv(
            out_dir / "fit_parameters.csv",
            ("parameter", "value", "unit", "meaning", "at_bound"),
            [
                (
                    name,
                    value,
                    unit,
                    PARAMETER_MEANINGS[name],
                    "yes" if name in fit.parameters_at_bounds else "no",
                )
                for name, value, unit in zip(
                    PARAMETER_NAMES, fit.parameters.as_vector(), PARAMETER_UNITS, strict=True
                )
            ],
        ),
        write_csv(out_dir / "efficiency_points.csv", prediction_columns, prediction_rows),
        write_csv(out_dir / "efficiency_curves.csv", ("storage", "cores", "jobs", "model_pct"), curves),
        write_csv(
            out_dir / "bnl_rates.csv", ("mb_s_per_worker", "storage", "workers", "aggregate_mb_s"), bnl_rates
        ),
        write_csv(
            out_dir / "bnl_saturation.csv",
            (
                "mb_s_per_worker",
                "storage",
                "saturation_workers",
                "rate_peak_workers",
                "ssd_over_hdd_full_load",
            ),
            bnl_summary,
        ),
        write_csv(
            out_dir / "read_rate_profile.csv",
            (
                "job_read_rate_mb_s",
                "fit_rms_pts",
                *other_parameters,
                *(f"bnl_saturation_{s}" for s in BNL_DEVICES),
                "bnl_ssd_over_hdd",
            ),
            profile,
        ),
        write_csv(
            out_dir / "price_performance.csv",
            (
                "storage",
                "unit_price_gbp",
                "throughput_8core",
                "capacity_gb",
                "price_per_throughput_published",
                "price_per_throughput_exact",
                "price_per_throughput_decimals",
                "price_per_gb_published",
                "price_per_gb_exact",
                "price_per_gb_decimals",
            ),
            [
                (
                    e.row.storage,
                    e.row.unit_price_gbp,
                    e.throughput,
                    e.row.capacity_gb,
                    e.price_per_throughput.published,
                    e.price_per_throughput.exact,
                    "" if e.price_per_throughput.decimals is None else e.price_per_throughput.decimals,
                    e.price_per_gb.published,
                    e.price_per_gb.exact,
                    "" if e.price_per_gb.decimals is None else e.price_per_gb.decimals,
                )
                for e in table
            ],
        ),
        write_csv(
            out_dir / "throughput_inconsistencies.csv",
            ("source", "storage", "cores", "jobs", "efficiency", "published_throughput", "jobs_x_efficiency"),
            [
                (
                    row.source,
                    row.storage,
                    row.cores,
                    row.jobs,
                    row.efficiency_text,
                    row.throughput_text,
                    value,
                )
                for row, value in inconsistent
            ],
        ),
    ]
