"""The tape figures of seed 003 (STAR's 2006 HPSS performance study), transcribed into studies/data/.

Sizes: the seed's table of average sizes gives bytes beside "MB" values that are bytes / 2^20, truncated (e.g.
298,583,617 bytes is listed as 284), and its text quotes those same values (84 and 284 MB). The seed's file
sizes are therefore read as MiB; rates stay in the drive's decimal MB/s, as in the drive profiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from carousel.domain.errors import ConfigError
from studies.csv_records import read_records

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
PUBLISHED_CSV = "tape_star2006_published.csv"
MIB = 2**20
_COLUMNS = (
    "key",
    "document",
    "section",
    "quantity",
    "low",
    "high",
    "unit",
    "file_size_mib",
    "drives",
    "note",
)
# Every figure the study compares against or draws; the loader refuses a file that lacks one.
REQUIRED_KEYS = (
    "efficiency_mudst",
    "efficiency_event",
    "efficiency_small",
    "improvement_event_over_mudst",
    "rate_small_files",
    "rate_best_hour",
    "observed_rate_mudst",
    "observed_rate_event",
    "files_per_mount_star",
    "drive_rate",
    "drives",
)


@dataclass(frozen=True)
class PublishedFigure:
    """One figure of the seed: a value (low == high) or a range, with the file size it is about."""

    key: str
    document: str
    section: str
    quantity: str
    low: float
    high: float
    unit: str
    file_size_mib: float | None
    drives: int | None
    note: str

    @property
    def midpoint(self) -> float:
        return (self.low + self.high) / 2

    @property
    def file_size_bytes(self) -> int:
        if self.file_size_mib is None:
            raise ConfigError(f"{PUBLISHED_CSV}: {self.key} names no file size")
        return round(self.file_size_mib * MIB)


@dataclass(frozen=True)
class Star2006Figures:
    """The published figures by key."""

    by_key: dict[str, PublishedFigure]

    def __getitem__(self, key: str) -> PublishedFigure:
        return self.by_key[key]

    @property
    def drives(self) -> int:
        return round(self.by_key["drives"].low)

    @property
    def typical_files_per_mount(self) -> float:
        """STAR's usual regime (the low end of its stated range)."""
        return self.by_key["files_per_mount_star"].low


def load_star2006_figures(path: Path | None = None) -> Star2006Figures:
    """Read the transcription; every bad cell is reported by file, line and column."""
    source = path or DATA_DIR / PUBLISHED_CSV
    figures: dict[str, PublishedFigure] = {}
    for record in read_records(source, _COLUMNS):
        key = record.required_text("key")
        if key in figures:
            raise ConfigError(f"{source.name}, line {record.line}: key {key!r} appears twice")
        low, high = record.number("low"), record.number("high")
        if low > high:
            raise ConfigError(f"{source.name}, line {record.line}: low {low:g} is above high {high:g}")
        drives = record.optional_number("drives")
        figures[key] = PublishedFigure(
            key=key,
            document=record.required_text("document"),
            section=record.required_text("section"),
            quantity=record.required_text("quantity"),
            low=low,
            high=high,
            unit=record.required_text("unit"),
            file_size_mib=record.optional_number("file_size_mib"),
            drives=None if drives is None else round(drives),
            note=record.text("note"),
        )
    missing = [key for key in REQUIRED_KEYS if key not in figures]
    if missing:
        raise ConfigError(f"{source.name}: missing figure(s) {', '.join(missing)}")
    return Star2006Figures(figures)
