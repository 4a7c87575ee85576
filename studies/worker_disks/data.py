"""The worker-node disk figures transcribed from seeds 000, 001 and 002, loaded into typed rows.

Each row keeps the document (file name) and table or slide it was read from, so that every number the study
compares against can be traced back to its source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from carousel.domain.errors import ConfigError
from studies.csv_records import CsvRecord, read_records

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
HAMMERCLOUD_CSV = "worker_disks_hammercloud.csv"
LONGTERM_CSV = "worker_disks_longterm.csv"
PRICE_CSV = "worker_disks_price_performance.csv"
BNL_CSV = "worker_disks_bnl_proof.csv"

# Canonical names of the storage configurations; the documents' own labels are kept beside them.
STORAGE_KEYS = (
    "hdd",
    "raid0_2hdd",
    "raid1_2hdd",
    "raid0_3hdd",
    "ssd_intel",
    "ssd_kingston",
    "ssd_mtron",
    "raid0_2ssd",
)
# How figures and tables name them.
STORAGE_NAMES = {
    "hdd": "HDD",
    "raid1_2hdd": "2 HDD RAID1",
    "raid0_2hdd": "2 HDD RAID0",
    "raid0_3hdd": "3 HDD RAID0",
    "ssd_intel": "Intel X25-M SSD",
    "ssd_kingston": "Kingston V SSD",
    "ssd_mtron": "Mtron SSD",
    "raid0_2ssd": "2 SSD RAID0",
}
ACCESS_METHODS = ("filestager", "direct")


@dataclass(frozen=True)
class HammerCloudRow:
    """One row of a HammerCloud table: mean job efficiency and throughput (jobs x efficiency) of nodes."""

    document: str
    table: str
    access: str
    nodes: str
    storage: str
    storage_label: str
    cores: int
    jobs: int
    efficiency: float | None
    throughput: float | None
    note: str
    efficiency_text: str = ""
    throughput_text: str = ""

    @property
    def source(self) -> str:
        return f"{self.document} {self.table}"


@dataclass(frozen=True)
class LongTermRow:
    document: str
    table: str
    storage: str
    storage_label: str
    cores: int
    efficiency: float
    note: str

    @property
    def source(self) -> str:
        return f"{self.document} {self.table}"


@dataclass(frozen=True)
class PriceRow:
    """One row of the price/performance table with the inputs it was computed from."""

    document: str
    table: str
    storage: str
    storage_label: str
    unit_price_gbp: float
    capacity_gb: float
    capacity_source: str
    throughput_table: str
    throughput_storage: str
    throughput_cores: int
    throughput_jobs: int
    price_per_throughput_gbp: float
    price_per_gb_gbp: float
    price_per_throughput_text: str
    price_per_gb_text: str

    @property
    def source(self) -> str:
        return f"{self.document} {self.table}"


@dataclass(frozen=True)
class BnlStatement:
    """A figure stated on a slide of the BNL PROOF talk; point values have low == high."""

    document: str
    slide: str
    quantity: str
    device: str
    workload: str
    low: float
    high: float
    unit: str
    note: str

    @property
    def source(self) -> str:
        return f"{self.document} slide '{self.slide}'"


@dataclass(frozen=True)
class WorkerDiskData:
    hammercloud: tuple[HammerCloudRow, ...]
    longterm: tuple[LongTermRow, ...]
    prices: tuple[PriceRow, ...]
    bnl: tuple[BnlStatement, ...]

    def bnl_statement(self, quantity: str, device: str = "", workload: str = "") -> BnlStatement:
        """The single statement of `quantity` for `device` (and `workload` when given)."""
        found = [
            statement
            for statement in self.bnl
            if statement.quantity == quantity
            and statement.device == device
            and (not workload or statement.workload == workload)
        ]
        if len(found) != 1:
            raise ConfigError(
                f"{BNL_CSV}: expected one statement of {quantity!r} for device {device!r}"
                f"{f' and workload {workload!r}' if workload else ''}, found {len(found)}"
            )
        return found[0]

    def hammercloud_row(self, table: str, storage: str, cores: int, jobs: int) -> HammerCloudRow:
        found = [
            row
            for row in self.hammercloud
            if row.table == table and row.storage == storage and row.cores == cores and row.jobs == jobs
        ]
        if len(found) != 1:
            raise ConfigError(
                f"{HAMMERCLOUD_CSV}: expected one row of table {table!r} for {storage} {cores}:{jobs}, "
                f"found {len(found)}"
            )
        return found[0]


def half_unit_of_last_place(printed: str) -> float:
    """Half a unit in the last printed digit: how far a rounded figure may lie from the value it rounds."""
    decimals = len(printed.partition(".")[2])
    return 0.5 * 10.0**-decimals


def _efficiency(record: CsvRecord, column: str) -> float | None:
    value = record.optional_number(column)
    if value is not None and not 0.0 < value <= 1.0:
        raise ConfigError(
            f"{record.path.name}, line {record.line}, column {column!r}: {value} is not in (0, 1]"
        )
    return value


def _hammercloud(record: CsvRecord) -> HammerCloudRow:
    efficiency = _efficiency(record, "efficiency")
    throughput = record.optional_number("throughput")
    if (efficiency is None) != (throughput is None):
        raise ConfigError(
            f"{record.path.name}, line {record.line}: give both efficiency and throughput, or neither"
        )
    return HammerCloudRow(
        document=record.required_text("document"),
        table=record.required_text("table"),
        access=record.choice("access", ACCESS_METHODS),
        nodes=record.text("nodes"),
        storage=record.choice("storage", STORAGE_KEYS),
        storage_label=record.required_text("storage_label"),
        cores=record.integer("cores"),
        jobs=record.integer("jobs"),
        efficiency=efficiency,
        throughput=throughput,
        note=record.text("note"),
        efficiency_text=record.text("efficiency"),
        throughput_text=record.text("throughput"),
    )


def _longterm(record: CsvRecord) -> LongTermRow:
    efficiency = _efficiency(record, "efficiency")
    if efficiency is None:
        raise ConfigError(f"{record.path.name}, line {record.line}, column 'efficiency': empty")
    return LongTermRow(
        document=record.required_text("document"),
        table=record.required_text("table"),
        storage=record.choice("storage", STORAGE_KEYS),
        storage_label=record.required_text("storage_label"),
        cores=record.integer("cores"),
        efficiency=efficiency,
        note=record.text("note"),
    )


def _price(record: CsvRecord) -> PriceRow:
    return PriceRow(
        document=record.required_text("document"),
        table=record.required_text("table"),
        storage=record.choice("storage", STORAGE_KEYS),
        storage_label=record.required_text("storage_label"),
        unit_price_gbp=record.number("unit_price_gbp"),
        capacity_gb=record.number("capacity_gb"),
        capacity_source=record.required_text("capacity_source"),
        throughput_table=record.required_text("throughput_table"),
        throughput_storage=record.choice("throughput_storage", STORAGE_KEYS),
        throughput_cores=record.integer("throughput_cores"),
        throughput_jobs=record.integer("throughput_jobs"),
        price_per_throughput_gbp=record.number("price_per_throughput_gbp"),
        price_per_gb_gbp=record.number("price_per_gb_gbp"),
        price_per_throughput_text=record.required_text("price_per_throughput_gbp"),
        price_per_gb_text=record.required_text("price_per_gb_gbp"),
    )


def _bnl(record: CsvRecord) -> BnlStatement:
    device = record.text("device")
    if device and device not in STORAGE_KEYS:
        raise ConfigError(
            f"{record.path.name}, line {record.line}, column 'device': {device!r} is not one of "
            f"{', '.join(STORAGE_KEYS)}"
        )
    low, high = record.number("low"), record.number("high")
    if low > high:
        raise ConfigError(f"{record.path.name}, line {record.line}: low {low} is above high {high}")
    return BnlStatement(
        document=record.required_text("document"),
        slide=record.required_text("slide"),
        quantity=record.required_text("quantity"),
        device=device,
        workload=record.text("workload"),
        low=low,
        high=high,
        unit=record.required_text("unit"),
        note=record.text("note"),
    )


def load_worker_disk_data(data_dir: Path = DATA_DIR) -> WorkerDiskData:
    hammercloud = read_records(
        data_dir / HAMMERCLOUD_CSV,
        (
            "document",
            "table",
            "access",
            "nodes",
            "storage",
            "storage_label",
            "cores",
            "jobs",
            "efficiency",
            "throughput",
            "note",
        ),
    )
    longterm = read_records(
        data_dir / LONGTERM_CSV,
        ("document", "table", "storage", "storage_label", "cores", "efficiency", "note"),
    )
    prices = read_records(
        data_dir / PRICE_CSV,
        (
            "document",
            "table",
            "storage",
            "storage_label",
            "unit_price_gbp",
            "capacity_gb",
            "capacity_source",
            "throughput_table",
            "throughput_storage",
            "throughput_cores",
            "throughput_jobs",
            "price_per_throughput_gbp",
            "price_per_gb_gbp",
        ),
    )
    bnl = read_records(
        data_dir / BNL_CSV,
        ("document", "slide", "quantity", "device", "workload", "low", "high", "unit", "note"),
    )
    return WorkerDiskData(
        hammercloud=tuple(_hammercloud(record) for record in hammercloud),
        longterm=tuple(_longterm(record) for record in longterm),
        prices=tuple(_price(record) for record in prices),
        bnl=tuple(_bnl(record) for record in bnl),
    )
