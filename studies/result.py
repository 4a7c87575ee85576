"""What a study hands back, and how its tables are written.

A study is a function `run(out_dir, progress) -> StudyResult`: it writes CSV tables and PNG figures under
`out_dir` and returns them with rows of the "published vs reproduced" table, which a report lays out.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class Progress(Protocol):
    """Told after each step of a study, so that a caller can draw a progress bar."""

    def __call__(self, step: str, done: int, total: int) -> None: ...


def no_progress(step: str, done: int, total: int) -> None:
    """A Progress that shows nothing."""


@dataclass(frozen=True)
class Comparison:
    """One published figure beside the value a study reproduces for it.

    A range (low < high) is met by any value inside it; `tolerance` is how far outside the published value or
    range the reproduced one may lie and still agree, in `unit`.
    """

    quantity: str
    source: str
    published_low: float
    published_high: float
    reproduced: float
    unit: str
    tolerance: float
    basis: str  # how the value was obtained: fitted, held out, recomputed, checked
    note: str = ""

    def __post_init__(self) -> None:
        if self.published_low > self.published_high:
            raise ValueError(f"{self.quantity}: published range {self.published_low}-{self.published_high}")
        if self.tolerance < 0:
            raise ValueError(f"{self.quantity}: negative tolerance {self.tolerance}")

    @property
    def published(self) -> str:
        if self.published_low == self.published_high:
            return f"{self.published_low:g}"
        return f"{self.published_low:g}-{self.published_high:g}"

    @property
    def difference(self) -> float:
        """Reproduced minus the nearest published value; zero inside a published range."""
        nearest = min(max(self.reproduced, self.published_low), self.published_high)
        return self.reproduced - nearest

    @property
    def agrees(self) -> bool:
        return math.isclose(abs(self.difference), self.tolerance) or abs(self.difference) <= self.tolerance


@dataclass(frozen=True)
class FigureFile:
    path: Path
    caption: str


@dataclass(frozen=True)
class StudyResult:
    name: str
    title: str
    tables: tuple[Path, ...]
    figures: tuple[FigureFile, ...]
    comparisons: tuple[Comparison, ...]
    findings: tuple[str, ...] = ()
    # What a storage admin takes from the study, a sentence each: the report opens with these.
    headlines: tuple[str, ...] = ()


COMPARISON_COLUMNS = (
    "quantity",
    "source",
    "published",
    "reproduced",
    "difference",
    "unit",
    "tolerance",
    "agrees",
    "basis",
    "note",
)


def _number(value: float) -> str:
    return f"{value:.6g}"


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """Write one table; floats keep six significant digits so that the files stay readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            if len(row) != len(columns):
                raise ValueError(f"{path.name}: row of {len(row)} cells for {len(columns)} columns")
            writer.writerow(_number(cell) if isinstance(cell, float) else cell for cell in row)
    return path


def write_comparisons_csv(comparisons: Iterable[Comparison], path: Path) -> Path:
    """The "published vs reproduced" table of one or more studies."""
    return write_csv(
        path,
        COMPARISON_COLUMNS,
        (
            (
                row.quantity,
                row.source,
                row.published,
                row.reproduced,
                row.difference,
                row.unit,
                row.tolerance,
                "yes" if row.agrees else "no",
                row.basis,
                row.note,
            )
            for row in comparisons
        ),
    )
