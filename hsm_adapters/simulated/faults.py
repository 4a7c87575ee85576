"""Fault injection for the simulated library: what goes wrong, when, reproducible from a seed.

A `FaultPlan` is plain data. The library draws read errors from its own random stream seeded by the plan, so
the same plan and the same submissions give the same failures. Times are library seconds (the engine's
clock, starting at 0), windows are half-open: [start_s, end_s).

- read errors: each read fails with `read_error_probability` (retryable: a second read may work);
- bad cartridges: named ones, plus `bad_cartridge_count` picked from the catalogue by the seed; the first
  mount attempt fails (MOUNT_FAILED), every file queued for the cartridge fails (not retryable) and the
  cartridge is disabled, so later recalls of it fail at once (each later batch one more MOUNT_FAILED);
- drive outages: a drive goes down at start_s (its cartridge is ejected, its work goes back to the queue)
  and comes back empty at end_s;
- offline windows: no mount and no new read start, lookups answer Unknown, submissions are refused,
  health is OFFLINE; queued work waits and nothing fails because of the outage;
- slow windows: the library answers late. Batches submitted in the window reach the library `latency_s`
  later; lookups time out (Unknown) when the latency exceeds the adapter's lookup timeout; health DEGRADED.
- stall windows: the library says ONLINE and accepts batches, but no mount and no new read starts (reads
  already going finish); queued work waits. A hung HSM scheduler, which carousel's liveness watch must notice;
- hung reads: reads of the named paths start and never end (the drive stays on them) until cancelled; the
  first `reads` reads of the path hang (None: every one). A read that hangs, which the read timeout must end.
- disk full: writes of staged files to their destination fail with ENOSPC during [start_s, end_s) (end absent:
  from start_s on), only the first `writes` of the window when given; the file fails, retryable. What a full
  disk buffer does to the back-end's copy;
- corrupt reads: the bytes written for the named paths differ from the checksum the event reports (one byte
  flipped); the first `reads` reads of the path (None: every one). What carousel's checksum verification must
  catch.
"""

from __future__ import annotations

import itertools
import random
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ConfigDict, TypeAdapter, ValidationError

from carousel.domain.errors import ConfigError


def _check_window(start_s: float, end_s: float) -> None:
    if start_s < 0:
        raise ValueError(f"start_s must be >= 0, got {start_s}")
    if end_s <= start_s:
        raise ValueError(f"end_s ({end_s}) must be after start_s ({start_s})")


@dataclass(frozen=True, slots=True)
class Window:
    """A period of library time, [start_s, end_s)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        _check_window(self.start_s, self.end_s)

    def contains(self, t: float) -> bool:
        return self.start_s <= t < self.end_s


@dataclass(frozen=True, slots=True)
class DriveOutage:
    """Drive `drive` (a name such as "drive03") is down during [start_s, end_s)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    drive: str
    start_s: float
    end_s: float

    def __post_init__(self) -> None:
        _check_window(self.start_s, self.end_s)


@dataclass(frozen=True, slots=True)
class SlowWindow:
    """During [start_s, end_s) every answer of the library takes latency_s longer."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    start_s: float
    end_s: float
    latency_s: float

    def __post_init__(self) -> None:
        _check_window(self.start_s, self.end_s)
        if self.latency_s <= 0:
            raise ValueError(f"latency_s must be > 0, got {self.latency_s}")

    def contains(self, t: float) -> bool:
        return self.start_s <= t < self.end_s


@dataclass(frozen=True, slots=True)
class HungRead:
    """Reads of `path` start and never finish until cancelled: its first `reads` reads (None: all)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    path: str
    reads: int | None = None

    def __post_init__(self) -> None:
        if self.reads is not None and self.reads < 1:
            raise ValueError(f"reads must be at least 1 (or absent: every read), got {self.reads}")


@dataclass(frozen=True, slots=True)
class DiskFull:
    """Writes fail with ENOSPC during [start_s, end_s) (end_s None: for ever); only the first `writes` writes
    of the window when given."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    start_s: float = 0.0
    end_s: float | None = None
    writes: int | None = None

    def __post_init__(self) -> None:
        if self.end_s is None:
            if self.start_s < 0:
                raise ValueError(f"start_s must be >= 0, got {self.start_s}")
        else:
            _check_window(self.start_s, self.end_s)
        if self.writes is not None and self.writes < 1:
            raise ValueError(f"writes must be at least 1 (or absent: every write), got {self.writes}")

    def contains(self, t: float) -> bool:
        return self.start_s <= t and (self.end_s is None or t < self.end_s)


@dataclass(frozen=True, slots=True)
class CorruptRead:
    """The bytes written for `path` differ from its checksum: its first `reads` reads (None: all)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    path: str
    reads: int | None = None

    def __post_init__(self) -> None:
        if self.reads is not None and self.reads < 1:
            raise ValueError(f"reads must be at least 1 (or absent: every read), got {self.reads}")


@dataclass(frozen=True, slots=True)
class FaultPlan:
    __pydantic_config__ = ConfigDict(extra="forbid")

    seed: int = 0
    read_error_probability: float = 0.0
    bad_cartridges: tuple[str, ...] = ()
    bad_cartridge_count: int = 0
    drive_outages: tuple[DriveOutage, ...] = ()
    offline_windows: tuple[Window, ...] = ()
    slow_windows: tuple[SlowWindow, ...] = ()
    stall_windows: tuple[Window, ...] = ()
    hung_reads: tuple[HungRead, ...] = ()
    disk_full: tuple[DiskFull, ...] = ()
    corrupt_reads: tuple[CorruptRead, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.read_error_probability <= 1.0:
            raise ValueError(
                f"read_error_probability must be within [0, 1], got {self.read_error_probability}"
            )
        if self.bad_cartridge_count < 0:
            raise ValueError(f"bad_cartridge_count must be >= 0, got {self.bad_cartridge_count}")
        by_drive: dict[str, list[DriveOutage]] = {}
        for outage in self.drive_outages:
            by_drive.setdefault(outage.drive, []).append(outage)
        for drive, outages in by_drive.items():
            ordered = sorted(outages, key=lambda o: o.start_s)
            for before, after in itertools.pairwise(ordered):
                if after.start_s < before.end_s:
                    raise ValueError(f"drive_outages of {drive} overlap at {after.start_s}")
        windows_by_name = {"offline_windows": self.offline_windows, "stall_windows": self.stall_windows}
        for name, windows in windows_by_name.items():
            ordered_windows = sorted(windows, key=lambda w: w.start_s)
            for before_w, after_w in itertools.pairwise(ordered_windows):
                if after_w.start_s < before_w.end_s:
                    raise ValueError(f"{name} overlap at {after_w.start_s}")

    def pick_bad_cartridges(self, tapes: Sequence[str]) -> frozenset[str]:
        """The named bad cartridges plus `bad_cartridge_count` drawn from `tapes` by the seed."""
        named = set(self.bad_cartridges)
        if self.bad_cartridge_count:
            others = sorted(set(tapes) - named)
            count = min(self.bad_cartridge_count, len(others))
            named.update(random.Random(f"bad-cartridges:{self.seed}").sample(others, count))
        return frozenset(named)

    def is_offline(self, t: float) -> bool:
        return any(w.contains(t) for w in self.offline_windows)

    def latency_s(self, t: float) -> float:
        """Extra answer time at library time t (0 outside slow windows)."""
        return max((w.latency_s for w in self.slow_windows if w.contains(t)), default=0.0)


NO_FAULTS = FaultPlan()

_PLAN_ADAPTER: TypeAdapter[FaultPlan] = TypeAdapter(FaultPlan)


def fault_plan_from_mapping(data: Mapping[str, object], *, source: str = "faults") -> FaultPlan:
    """Validate a mapping (for example a TOML table) into a FaultPlan; errors name the source and key."""
    try:
        return _PLAN_ADAPTER.validate_python(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '(table)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{source}: invalid fault plan: {problems}") from exc


def load_fault_plan(path: str | Path) -> FaultPlan:
    """Read a fault plan from the `[faults]` table of a TOML file (or from its top level if there is none)."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read fault plan: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    table = data.get("faults", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: key 'faults' must be a table")
    return fault_plan_from_mapping(table, source=str(file))
