"""Traces: the requests a replay plays, one file per row.

CSV, UTF-8, header exactly `arrival_s,request,path,size_bytes,tape,position_bytes,group,priority`, optionally
followed by `release_after_s` (how long after its file is staged the client releases it: the disk buffer's
pin; empty: the replay's setting), then optionally by `library` (the library holding the copy the row
reads; empty: `default`, docs/decisions.md §17); group and priority may be empty (then "default" and 0).
Rows may come in any order; the replay sorts them by arrival (ties keep the file's order). A path may appear
in several requests, always with the same size, tape, position and library. Bad input is refused with a
ConfigError naming the file, the line and the column.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from carousel.domain.errors import ConfigError
from carousel.domain.libraries import DEFAULT_LIBRARY, library_name_problem

TRACE_HEADER = ("arrival_s", "request", "path", "size_bytes", "tape", "position_bytes", "group", "priority")
RELEASE_COLUMN = "release_after_s"
LIBRARY_COLUMN = "library"
HEADERS = (
    TRACE_HEADER,
    (*TRACE_HEADER, RELEASE_COLUMN),
    (*TRACE_HEADER, LIBRARY_COLUMN),
    (*TRACE_HEADER, RELEASE_COLUMN, LIBRARY_COLUMN),
)
DEFAULT_GROUP = "default"


@dataclass(frozen=True, slots=True)
class TraceRow:
    arrival_s: float
    request: str
    path: str
    size_bytes: int
    tape: str
    position_bytes: int
    group: str = DEFAULT_GROUP
    priority: int = 0
    release_after_s: float | None = None  # None: the replay's release_after_s
    library: str = DEFAULT_LIBRARY  # the library holding the copy this row reads


@dataclass(frozen=True, slots=True)
class Trace:
    rows: tuple[TraceRow, ...]  # by arrival, ties in file order
    source: str = "(in memory)"

    @property
    def paths(self) -> int:
        return len({row.path for row in self.rows})

    @property
    def libraries(self) -> tuple[str, ...]:
        """The libraries its rows read from, by name."""
        return tuple(sorted({row.library for row in self.rows}))


def make_trace(rows: Iterable[TraceRow], source: str = "(in memory)") -> Trace:
    """Rows sorted by arrival; refuses a path given two different places (naming both rows)."""
    ordered = sorted(enumerate(rows), key=lambda item: (item[1].arrival_s, item[0]))
    seen: dict[str, tuple[int, TraceRow]] = {}
    for number, row in ordered:
        first = seen.setdefault(row.path, (number, row))
        if (first[1].size_bytes, first[1].tape, first[1].position_bytes, first[1].library) != (
            row.size_bytes,
            row.tape,
            row.position_bytes,
            row.library,
        ):
            raise ConfigError(
                f"{source}: {_where(number)}: column path: {row.path} is on {row.tape} of library"
                f" {row.library} at byte {row.position_bytes} ({row.size_bytes} bytes) here but elsewhere in"
                f" {_where(first[0])}"
            )
    return Trace(rows=tuple(row for _, row in ordered), source=source)


def _where(row_number: int) -> str:
    return f"line {row_number + 2}"  # the header is line 1


def load_trace(path: str | Path) -> Trace:
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the trace: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text: {exc.reason}") from exc
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None or tuple(header) not in HEADERS:
        raise ConfigError(
            f"{source}: line 1: the header must be exactly {','.join(TRACE_HEADER)}"
            f" (optionally followed by ,{RELEASE_COLUMN} and then ,{LIBRARY_COLUMN})"
        )
    extras = tuple(header[len(TRACE_HEADER) :])
    rows = [_parse(source, line, fields, extras) for line, fields in enumerate(reader, start=2) if fields]
    if not rows:
        raise ConfigError(f"{source}: the trace has no rows")
    return make_trace(rows, str(source))


def _parse(source: Path, line: int, fields: Sequence[str], extras: tuple[str, ...]) -> TraceRow:
    where = f"{source}: line {line}"
    columns = len(TRACE_HEADER) + len(extras)
    if len(fields) != columns:
        raise ConfigError(f"{where}: {len(fields)} columns, expected {columns}")
    arrival, request, path, size, tape, position, group, priority = (f.strip() for f in fields[:8])
    extra = dict(zip(extras, (f.strip() for f in fields[8:]), strict=True))
    release = extra.get(RELEASE_COLUMN, "")
    library = extra.get(LIBRARY_COLUMN, "") or DEFAULT_LIBRARY
    problem = library_name_problem(library)
    if problem is not None:
        raise ConfigError(f"{where}: column {LIBRARY_COLUMN}: {problem}")
    try:
        arrival_s = float(arrival)
    except ValueError:
        raise ConfigError(f"{where}: column arrival_s: {arrival!r} is not a number of seconds") from None
    if not math.isfinite(arrival_s) or arrival_s < 0:
        raise ConfigError(f"{where}: column arrival_s: {arrival!r} must be a finite number >= 0")
    for name, value in (("request", request), ("path", path), ("tape", tape)):
        if not value:
            raise ConfigError(f"{where}: column {name}: empty")
    return TraceRow(
        arrival_s=arrival_s,
        request=request,
        path=path,
        size_bytes=_whole(where, "size_bytes", size),
        tape=tape,
        position_bytes=_whole(where, "position_bytes", position),
        group=group or DEFAULT_GROUP,
        priority=_whole(where, "priority", priority) if priority else 0,
        release_after_s=_release(where, release) if release else None,
        library=library,
    )


def _release(where: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{where}: column {RELEASE_COLUMN}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: column {RELEASE_COLUMN}: {text!r} must be a finite number >= 0")
    return value


def _whole(where: str, column: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{where}: column {column}: {text!r} is not a whole number") from None
    if value < 0:
        raise ConfigError(f"{where}: column {column}: {value} is negative")
    return value


def write_trace(trace: Trace | Iterable[TraceRow], path: str | Path) -> None:
    rows = trace.rows if isinstance(trace, Trace) else tuple(trace)
    releases = any(row.release_after_s is not None for row in rows)
    libraries = any(row.library != DEFAULT_LIBRARY for row in rows)
    with Path(path).open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            (
                *TRACE_HEADER,
                *((RELEASE_COLUMN,) if releases else ()),
                *((LIBRARY_COLUMN,) if libraries else ()),
            )
        )
        for row in rows:
            release = (
                (_seconds(row.release_after_s) if row.release_after_s is not None else "",)
                if releases
                else ()
            )
            writer.writerow(
                (
                    _seconds(row.arrival_s),
                    row.request,
                    row.path,
                    row.size_bytes,
                    row.tape,
                    row.position_bytes,
                    row.group,
                    row.priority,
                    *release,
                    *((row.library,) if libraries else ()),
                )
            )


def _seconds(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
