"""Typed reading of the transcribed CSV files: every bad cell is reported by file, line and column."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from carousel.domain.errors import ConfigError


@dataclass(frozen=True)
class CsvRecord:
    """One data line of a CSV file, with its position kept so that errors can point at it."""

    path: Path
    line: int
    cells: dict[str, str]

    def _where(self, column: str) -> str:
        return f"{self.path.name}, line {self.line}, column {column!r}"

    def text(self, column: str) -> str:
        return self.cells[column].strip()

    def required_text(self, column: str) -> str:
        value = self.text(column)
        if not value:
            raise ConfigError(f"{self._where(column)}: empty, a value is required")
        return value

    def number(self, column: str) -> float:
        value = self.optional_number(column)
        if value is None:
            raise ConfigError(f"{self._where(column)}: empty, a number is required")
        return value

    def optional_number(self, column: str) -> float | None:
        raw = self.text(column)
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{self._where(column)}: {raw!r} is not a number") from None
        if not math.isfinite(value):
            raise ConfigError(f"{self._where(column)}: {raw!r} is not a finite number")
        return value

    def integer(self, column: str) -> int:
        raw = self.required_text(column)
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{self._where(column)}: {raw!r} is not an integer") from None

    def choice(self, column: str, allowed: Sequence[str]) -> str:
        value = self.required_text(column)
        if value not in allowed:
            raise ConfigError(f"{self._where(column)}: {value!r} is not one of {', '.join(allowed)}")
        return value


def read_records(path: Path, columns: Sequence[str]) -> list[CsvRecord]:
    """Read a CSV file whose header holds at least `columns`; lines are numbered as an editor shows them."""
    if not path.is_file():
        raise ConfigError(f"{path}: data file not found")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [column for column in columns if column not in header]
        if missing:
            raise ConfigError(f"{path.name}, line 1: missing column(s) {', '.join(missing)}")
        records = []
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                raise ConfigError(f"{path.name}, line {reader.line_num}: wrong number of cells")
            records.append(CsvRecord(path=path, line=reader.line_num, cells=dict(row)))
    return records
