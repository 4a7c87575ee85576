"""A report is a table: named columns with units, rows of plain values, and the window it covers. The same
table becomes JSON, CSV or a figure."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from carousel.reports.window import Window

Value = str | int | float | datetime | None


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    unit: str  # "s", "bytes", "bytes/s", "ratio", "count", "UTC time", "" for names
    description: str


@dataclass(frozen=True, slots=True)
class Report:
    kind: str
    title: str
    window: Window
    generated_at: datetime
    columns: tuple[Column, ...]
    rows: list[tuple[Value, ...]]
    notes: tuple[str, ...] = field(default=())

    def column(self, name: str) -> list[Value]:
        index = [c.name for c in self.columns].index(name)
        return [row[index] for row in self.rows]

    def records(self) -> list[dict[str, Value]]:
        names = [c.name for c in self.columns]
        return [dict(zip(names, row, strict=True)) for row in self.rows]


def iso(when: datetime) -> str:
    """ISO 8601 in UTC with a Z, to the microsecond only when there is one."""
    text = when.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def _plain(value: Value) -> str | int | float | None:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_document(report: Report) -> dict[str, Any]:
    """The JSON document: what the report is, its columns with units, and one object per row."""
    return {
        "kind": report.kind,
        "title": report.title,
        "since": iso(report.window.since),
        "until": iso(report.window.until),
        "bucket": report.window.bucket.value,
        "generated_at": iso(report.generated_at),
        "columns": [{"name": c.name, "unit": c.unit, "description": c.description} for c in report.columns],
        "rows": [_row_object(report.columns, row) for row in report.rows],
        "notes": list(report.notes),
    }


def _row_object(columns: Sequence[Column], row: Sequence[Value]) -> Mapping[str, Any]:
    return {c.name: _plain(v) for c, v in zip(columns, row, strict=True)}


def to_csv(report: Report) -> str:
    """One header line of column names (units are in the names: _s, _bytes, _per_s), one line per row;
    an empty field where a figure cannot be computed."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.name for c in report.columns])
    for row in report.rows:
        writer.writerow(["" if (plain := _plain(v)) is None else plain for v in row])
    return out.getvalue()
