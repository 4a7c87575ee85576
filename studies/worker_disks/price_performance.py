"""The price/performance table of seed 000, recomputed from its inputs.

Price per throughput divides the unit price by the 8-core node throughput of the FileStager table; price per
GB divides it by the capacity. The published values are compared at the precision the paper rounded them to,
which is found, not assumed: the finest number of decimals at which the recomputed value matches.
"""

from __future__ import annotations

from dataclasses import dataclass

from studies.worker_disks.data import PriceRow, WorkerDiskData

# The paper prints two decimals; a value printed as 34.40 may have been rounded to one.
_PRINTED_DECIMALS = 2


@dataclass(frozen=True)
class Recomputed:
    """One published ratio beside its exact recomputation."""

    exact: float
    published: float
    decimals: int | None  # finest rounding at which they match, or None when none does

    @property
    def matches(self) -> bool:
        return self.decimals is not None

    @property
    def rounded(self) -> float:
        return round(self.exact, self.decimals if self.decimals is not None else _PRINTED_DECIMALS)


@dataclass(frozen=True)
class PricePerformance:
    row: PriceRow
    throughput: float
    price_per_throughput: Recomputed
    price_per_gb: Recomputed


def _compare(exact: float, published: float) -> Recomputed:
    for decimals in range(_PRINTED_DECIMALS, -1, -1):
        if round(exact, decimals) == round(published, decimals) == published:
            return Recomputed(exact, published, decimals)
    return Recomputed(exact, published, None)


def recompute_price_performance(data: WorkerDiskData) -> tuple[PricePerformance, ...]:
    results = []
    for row in data.prices:
        source = data.hammercloud_row(
            row.throughput_table, row.throughput_storage, row.throughput_cores, row.throughput_jobs
        )
        if source.throughput is None:
            raise ValueError(f"{source.source}: {source.storage} has no throughput to price")
        results.append(
            PricePerformance(
                row=row,
                throughput=source.throughput,
                price_per_throughput=_compare(
                    row.unit_price_gbp / source.throughput, row.price_per_throughput_gbp
                ),
                price_per_gb=_compare(row.unit_price_gbp / row.capacity_gb, row.price_per_gb_gbp),
            )
        )
    return tuple(results)


def ssd_to_hdd_ratios(table: tuple[PricePerformance, ...], hdd_storage: str = "raid0_2hdd") -> list[float]:
    """How many times worse each SSD's price/performance is than the HDD pair's, for both metrics."""
    by_storage = {entry.row.storage: entry for entry in table}
    if hdd_storage not in by_storage:
        raise ValueError(f"no {hdd_storage} row in the price/performance table")
    hdd = by_storage[hdd_storage]
    return [
        ratio
        for entry in table
        if entry.row.storage != hdd_storage
        for ratio in (
            entry.price_per_throughput.rounded / hdd.price_per_throughput.rounded,
            entry.price_per_gb.rounded / hdd.price_per_gb.rounded,
        )
    ]
