"""The simulated library's catalogue: which file sits on which cartridge, where, and how big it is.

A catalogue is generated deterministically from a seed (`generate_catalogue`) or read from a CSV file with the
header `path,size_bytes,tape,position_bytes` (`load_catalogue_csv`). It is immutable: a mapping from path
to entry, plus the entries of each tape in position order. Columns are kept in numpy arrays and entries are
built on lookup, so a million files cost little memory and load in seconds.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from carousel.domain.errors import ConfigError
from hsm_adapters.simulated.profiles import DriveProfile

CSV_HEADER = ("path", "size_bytes", "tape", "position_bytes")
STAR2006_SIGMA = 0.5  # log-normal spread of sizes around each STAR file type's average
_STAR2006_TABLE = "star2006_file_types.csv"
_GENERIC_TYPE = "data"
_INTEGER = re.compile(r"-?[0-9]+")

Int64Array = npt.NDArray[np.int64]
Layout = Literal["packed", "spread"]


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    path: str
    size_bytes: int
    tape: str
    position_bytes: int  # bytes from the start of the tape's data to the file's first byte

    @property
    def end_bytes(self) -> int:
        return self.position_bytes + self.size_bytes


@dataclass(frozen=True, slots=True)
class _Problem:
    row: int  # index in the input order
    column: str
    message: str
    # Another row involved, named by whoever reports the problem ("row 3", "line 5"), then more text.
    other_row: int | None = None
    after_other: str = ""

    def describe(self, name_row: Callable[[int], str]) -> str:
        if self.other_row is None:
            return self.message
        return f"{self.message}{name_row(self.other_row)}{self.after_other}"


class CatalogueInvalid(ValueError):
    """Columns that do not make a catalogue; `row` is the index of the offending row in the input."""

    def __init__(self, problem: _Problem) -> None:
        super().__init__(f"row {problem.row}: {problem.column}: {problem.describe(lambda row: f'row {row}')}")
        self.problem = problem


class Catalogue(Mapping[str, CatalogueEntry]):
    """Immutable: path → entry, and tape → entries in position order. Iterates by tape, then position."""

    __slots__ = ("_index", "_paths", "_positions", "_sizes", "_tape_codes", "_tape_starts", "_tapes")

    def __init__(
        self,
        paths: Sequence[str],
        sizes: npt.ArrayLike,
        tapes: Sequence[str],
        positions: npt.ArrayLike,
        *,
        capacity_bytes: int | None = None,
    ) -> None:
        """Columns of equal length, any order. Raises CatalogueInvalid: negative numbers, empty names,
        duplicate paths, files overlapping on one tape, or (given a capacity) files past the tape's end."""
        size_column = np.asarray(sizes, dtype=np.int64)
        position_column = np.asarray(positions, dtype=np.int64)
        if not len(paths) == len(tapes) == len(size_column) == len(position_column):
            raise ValueError("catalogue columns differ in length")
        _raise_first(_check_values(paths, size_column, tapes, position_column, capacity_bytes))
        index = dict(zip(paths, range(len(paths)), strict=True))
        if len(index) != len(paths):
            _raise_first(_first_duplicate(paths))
        tape_names = sorted(set(tapes))
        code_of = {tape: code for code, tape in enumerate(tape_names)}
        codes = np.fromiter((code_of[tape] for tape in tapes), dtype=np.int64, count=len(tapes))
        # Zero-size files sort before a file starting at the same place, so they never count as overlapping.
        order = np.lexsort((size_column, position_column, codes))
        _raise_first(_first_overlap(order, codes, size_column, position_column))

        self._paths: tuple[str, ...] = tuple(paths[i] for i in order.tolist())
        self._sizes: Int64Array = _frozen(size_column[order])
        self._positions: Int64Array = _frozen(position_column[order])
        self._tape_codes: Int64Array = _frozen(codes[order])
        self._tapes: tuple[str, ...] = tuple(tape_names)
        self._tape_starts: Int64Array = _frozen(
            np.searchsorted(self._tape_codes, np.arange(len(tape_names) + 1)).astype(np.int64)
        )
        self._index: dict[str, int] = {path: row for row, path in enumerate(self._paths)}

    # --- mapping ----------------------------------------------------------------------------------------

    def __getitem__(self, path: str) -> CatalogueEntry:
        return self._entry(self._index[path])

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._index

    def __repr__(self) -> str:
        return f"Catalogue({len(self)} files on {len(self._tapes)} tapes)"

    # --- by tape ----------------------------------------------------------------------------------------

    @property
    def tapes(self) -> tuple[str, ...]:
        """Tape ids, sorted."""
        return self._tapes

    def on_tape(self, tape: str) -> tuple[CatalogueEntry, ...]:
        """The tape's entries in position order; KeyError for a tape the catalogue does not know."""
        start, stop = self._tape_range(tape)
        return tuple(
            CatalogueEntry(path, size, tape, position)
            for path, size, position in zip(
                self._paths[start:stop],
                self._sizes[start:stop].tolist(),
                self._positions[start:stop].tolist(),
                strict=True,
            )
        )

    def file_count(self, tape: str) -> int:
        start, stop = self._tape_range(tape)
        return stop - start

    def used_bytes(self, tape: str) -> int:
        """Where the tape's last file ends."""
        start, stop = self._tape_range(tape)
        return int(self._positions[stop - 1] + self._sizes[stop - 1]) if stop > start else 0

    def total_bytes(self) -> int:
        return int(self._sizes.sum())

    def rows(self) -> Iterator[tuple[str, int, str, int]]:
        """(path, size_bytes, tape, position_bytes) by tape, then position: the CSV's rows."""
        tapes = self._tapes
        return zip(
            self._paths,
            self._sizes.tolist(),
            (tapes[code] for code in self._tape_codes.tolist()),
            self._positions.tolist(),
            strict=True,
        )

    def _tape_range(self, tape: str) -> tuple[int, int]:
        code = _bisect(self._tapes, tape)
        if code is None:
            raise KeyError(tape)
        return int(self._tape_starts[code]), int(self._tape_starts[code + 1])

    def _entry(self, row: int) -> CatalogueEntry:
        return CatalogueEntry(
            path=self._paths[row],
            size_bytes=int(self._sizes[row]),
            tape=self._tapes[int(self._tape_codes[row])],
            position_bytes=int(self._positions[row]),
        )


def _bisect(names: tuple[str, ...], name: str) -> int | None:
    low, high = 0, len(names)
    while low < high:
        middle = (low + high) // 2
        if names[middle] < name:
            low = middle + 1
        else:
            high = middle
    return low if low < len(names) and names[low] == name else None


def _frozen(array: Int64Array) -> Int64Array:
    array.flags.writeable = False
    return array


# --- validation -----------------------------------------------------------------------------------------


def _raise_first(problem: _Problem | None) -> None:
    if problem is not None:
        raise CatalogueInvalid(problem)


def _check_values(
    paths: Sequence[str],
    sizes: Int64Array,
    tapes: Sequence[str],
    positions: Int64Array,
    capacity_bytes: int | None,
) -> _Problem | None:
    candidates: list[_Problem] = []
    for column, values in (("size_bytes", sizes), ("position_bytes", positions)):
        negative = np.flatnonzero(values < 0)
        if negative.size:
            candidates.append(_Problem(int(negative[0]), column, f"negative ({int(values[negative[0]])})"))
    if capacity_bytes is not None:
        past = np.flatnonzero(positions + sizes > capacity_bytes)
        if past.size:
            row = int(past[0])
            end = int(positions[row] + sizes[row])
            candidates.append(
                _Problem(
                    row, "position_bytes", f"the file ends at {end}, past the tape's {capacity_bytes} bytes"
                )
            )
    for column, names in (("path", paths), ("tape", tapes)):
        for row, name in enumerate(names):
            if not name or name.strip() != name:
                candidates.append(_Problem(row, column, f"{name!r} is empty or has surrounding blanks"))
                break
    return min(candidates, key=lambda problem: problem.row, default=None)


def _first_duplicate(paths: Sequence[str]) -> _Problem:
    first_row: dict[str, int] = {}
    for row, path in enumerate(paths):
        if path in first_row:
            return _Problem(row, "path", f"{path!r} appears twice (first in ", first_row[path], ")")
        first_row[path] = row
    raise AssertionError("no duplicate path found")


def _first_overlap(
    order: Int64Array, codes: Int64Array, sizes: Int64Array, positions: Int64Array
) -> _Problem | None:
    sorted_codes = codes[order]
    ends = positions[order] + sizes[order]
    starts = positions[order]
    clash = np.flatnonzero((sorted_codes[1:] == sorted_codes[:-1]) & (starts[1:] < ends[:-1]))
    if not clash.size:
        return None
    rows = [(int(order[i + 1]), int(order[i])) for i in clash.tolist()]
    later, earlier = min(rows, key=max)
    if later < earlier:
        later, earlier = earlier, later
    return _Problem(later, "position_bytes", "overlaps the file of ", earlier, " on the same tape")


# --- CSV ------------------------------------------------------------------------------------------------


def write_catalogue_csv(catalogue: Catalogue, path: str | Path) -> None:
    """Write with the header path,size_bytes,tape,position_bytes, by tape then position.

    The same catalogue always gives the same bytes."""
    with Path(path).open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        writer.writerows(catalogue.rows())


def load_catalogue_csv(path: str | Path, *, capacity_bytes: int | None = None) -> Catalogue:
    """Read a catalogue CSV. Raises ConfigError naming the file, line and column of the first problem."""
    source = Path(path)
    try:
        stream = source.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read catalogue: {exc.strerror or exc}") from exc
    paths: list[str] = []
    sizes: list[int] = []
    tapes: list[str] = []
    positions: list[int] = []
    lines: list[int] = []
    with stream:
        reader = csv.reader(stream)
        try:
            header = next(reader, None)
            if header is None or tuple(header) != CSV_HEADER:
                raise ConfigError(
                    f"{source}: line 1: header must be {','.join(CSV_HEADER)}, not {','.join(header or [])!r}"
                )
            for record in reader:
                line = reader.line_num
                if len(record) != len(CSV_HEADER):
                    raise ConfigError(f"{source}: line {line}: expected 4 columns, found {len(record)}")
                paths.append(record[0])
                sizes.append(_parse_int(record[1], source, line, "size_bytes"))
                tapes.append(record[2])
                positions.append(_parse_int(record[3], source, line, "position_bytes"))
                lines.append(line)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"{source}: line {reader.line_num}: not a readable CSV: {exc}") from exc
    try:
        return Catalogue(paths, sizes, tapes, positions, capacity_bytes=capacity_bytes)
    except CatalogueInvalid as exc:
        problem = exc.problem
        raise ConfigError(
            f"{source}: line {lines[problem.row]}: column {problem.column}:"
            f" {problem.describe(lambda row: f'line {lines[row]}')}"
        ) from exc


def _parse_int(text: str, source: Path, line: int, column: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ConfigError(f"{source}: line {line}: column {column}: {text!r} is not a whole number of bytes")
    value = int(text)
    if value < 0:
        raise ConfigError(f"{source}: line {line}: column {column}: negative ({value})")
    return value


# --- generation -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileType:
    name: str
    average_bytes: int
    source: str


def star2006_file_types() -> tuple[FileType, ...]:
    """STAR's 2006 average file size by type, as transcribed from seed 003."""
    text = (resources.files("hsm_adapters.simulated") / _STAR2006_TABLE).read_text(encoding="utf-8")
    return tuple(
        FileType(name=row["file_type"], average_bytes=int(row["average_bytes"]), source=row["source"])
        for row in csv.DictReader(text.splitlines())
    )


def generate_catalogue(
    seed: int,
    cartridges: int,
    files_per_cartridge: int,
    size_model: str,
    profile: DriveProfile,
    *,
    layout: Layout = "packed",
) -> Catalogue:
    """A catalogue drawn from `seed` alone: `cartridges` tapes of `files_per_cartridge` files each.

    size_model: "star2006" (a STAR file type per file, equally weighted, log-normal size around the
    type's average), "fixed:<bytes>" or "lognormal:<median bytes>:<sigma>". Layout "packed" lays files end
    to end from the load point; "spread" scatters them over the whole cartridge with random gaps, as the
    few requested files of a full cartridge would be. Raises ConfigError when a tape's files do not fit its
    capacity.
    """
    if cartridges < 1 or files_per_cartridge < 1:
        raise ConfigError(
            f"need at least one cartridge and one file per cartridge, not {cartridges}, {files_per_cartridge}"
        )
    if layout not in ("packed", "spread"):
        raise ConfigError(f"unknown catalogue layout {layout!r}: packed or spread")
    rng = np.random.default_rng(seed)
    count = cartridges * files_per_cartridge
    type_names, type_of_file, sizes = _draw_sizes(rng, size_model, count)
    sizes = sizes.reshape(cartridges, files_per_cartridge)
    used = sizes.sum(axis=1)
    over = np.flatnonzero(used > profile.capacity_bytes)
    if over.size:
        raise ConfigError(
            f"size model {size_model!r}: {files_per_cartridge} files need {int(used[over[0]])} bytes"
            f" on one tape, more than the {profile.name} capacity of {profile.capacity_bytes}:"
            " use fewer files per cartridge"
        )
    positions = np.cumsum(sizes, axis=1) - sizes
    if layout == "spread":
        gaps = rng.exponential(size=(cartridges, files_per_cartridge + 1))
        gaps *= (profile.capacity_bytes - used)[:, None] / gaps.sum(axis=1, keepdims=True)
        positions += np.cumsum(np.floor(gaps[:, :files_per_cartridge]).astype(np.int64), axis=1)
    width = max(5, len(str(cartridges)))
    tape_ids = [f"T{number:0{width}d}" for number in range(1, cartridges + 1)]
    tape_column = [tape for tape in tape_ids for _ in range(files_per_cartridge)]
    sequence = list(range(1, files_per_cartridge + 1)) * cartridges
    paths = [
        f"/star/{type_names[kind]}/{tape}/{number}.root"
        for kind, tape, number in zip(type_of_file.tolist(), tape_column, sequence, strict=True)
    ]
    return Catalogue(
        paths, sizes.ravel(), tape_column, positions.ravel(), capacity_bytes=profile.capacity_bytes
    )


def _draw_sizes(
    rng: np.random.Generator, size_model: str, count: int
) -> tuple[list[str], Int64Array, Int64Array]:
    """(type names, type index per file, size per file) for a size model string."""
    kind, _, argument = size_model.partition(":")
    if kind == "star2006" and not argument:
        types = star2006_file_types()
        type_of_file = rng.integers(0, len(types), size=count)
        averages = np.array([file_type.average_bytes for file_type in types], dtype=np.float64)
        # A log-normal with this median has the type's average as its mean.
        medians = np.log(averages) - STAR2006_SIGMA**2 / 2
        drawn = rng.lognormal(mean=medians[type_of_file], sigma=STAR2006_SIGMA)
        return [file_type.name for file_type in types], type_of_file, _whole_bytes(drawn)
    no_types = np.zeros(count, dtype=np.int64)
    if kind == "fixed":
        size = _parse_number(argument, size_model, "bytes")
        if size < 1 or size != int(size):
            raise ConfigError(f"size model {size_model!r}: the size must be a positive whole number of bytes")
        return [_GENERIC_TYPE], no_types, np.full(count, int(size), dtype=np.int64)
    if kind == "lognormal":
        median_text, _, sigma_text = argument.partition(":")
        median = _parse_number(median_text, size_model, "median")
        sigma = _parse_number(sigma_text, size_model, "sigma")
        if median <= 0 or sigma < 0:
            raise ConfigError(
                f"size model {size_model!r}: the median must be positive and sigma not negative"
            )
        return [_GENERIC_TYPE], no_types, _whole_bytes(rng.lognormal(math.log(median), sigma, size=count))
    raise ConfigError(
        f"unknown size model {size_model!r}: star2006, fixed:<bytes> or lognormal:<median bytes>:<sigma>"
    )


def _parse_number(text: str, size_model: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ConfigError(f"size model {size_model!r}: {what} {text!r} is not a finite number")
    return value


def _whole_bytes(drawn: npt.NDArray[np.float64]) -> Int64Array:
    result: Int64Array = np.maximum(np.rint(drawn), 1).astype(np.int64)
    return result
