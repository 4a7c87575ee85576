"""The simulated library behind the HSM adapter protocol, on a scaled clock.

The library runs on its own seconds; the adapter maps them to the injected clock: library time
t = (clock.now() − t0) × scale, so scale 100 runs a hundred times faster than the wall clock, and a
ManualClock makes it run in virtual time (tests and the stepped service move the clock). Every call first
brings the library up to the clock's present and delivers the events that happened meanwhile, to the sink
if one is set (pushed during that call), otherwise kept for `poll_events`. Event times are mapped back:
at = t0 + t / scale.

Bytes: a batch file with a destination gets its bytes written there when its FILE_STAGED is emitted (in
virtual time, the write happens at the event), by `writer.StagedWriter` from the catalogue's content
(`content.py`: generated from the path, or copied from a directory of real files). A write that fails becomes
a retryable FILE_FAILED naming the reason. A file without a destination is recalled without bytes: the
replays of multi-GB catalogues keep accounting only. Lookups and FILE_STAGED carry the file's adler32.

With a read log (hsm_adapters.simulated.read_log), files a library brought to disk in an earlier process, or
in another process sharing the log, are on disk (lookup says so; the log is read again at each lookup and
submission): their submission is answered FILE_STAGED at once, without a tape read, until
carousel evicts them.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from carousel.domain.clock import Clock
from carousel.domain.errors import ConfigError, Unavailable
from carousel.domain.planning import LibraryCosts
from carousel.domain.sizes import decimal_size
from hsm_adapters.base import (
    Batch,
    BatchFile,
    CancelResult,
    Capacity,
    DriveCommand,
    Event,
    EventKind,
    EventSink,
    Health,
    LookupResult,
    NotOnTape,
    OnTape,
    Unknown,
)
from hsm_adapters.simulated.builder import LibrarySetup, build_library
from hsm_adapters.simulated.catalogue import Catalogue, generate_catalogue, load_catalogue_csv
from hsm_adapters.simulated.content import FileContent, GeneratedContent
from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.directory import directory_catalogue
from hsm_adapters.simulated.faults import FaultPlan, fault_plan_from_mapping, load_fault_plan
from hsm_adapters.simulated.library import Discipline, Library, SimEvent
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import DriveProfile, load_profile
from hsm_adapters.simulated.read_log import DISK, TAPE, ReadLog
from hsm_adapters.simulated.read_order import ReadOrderName, locate_order
from hsm_adapters.simulated.writer import StagedWriter

_FILE_ENDS = frozenset({EventKind.FILE_STAGED, EventKind.FILE_FAILED, EventKind.FILE_CANCELLED})


class SimulatedAdapter:
    """An `HsmAdapter` over a `Library`. Thread-safe: one lock around every call."""

    name = "simulated"

    def __init__(
        self,
        library: Library,
        clock: Clock,
        *,
        scale: float = 1.0,
        lookup_timeout_s: float = 10.0,
        read_log: ReadLog | None = None,
        read_order: ReadOrderName = "position",
        content: FileContent | None = None,
    ) -> None:
        if scale <= 0:
            raise ConfigError(f"scale must be > 0, got {scale}")
        self.library = library
        self._clock = clock
        self._scale = scale
        self._lookup_timeout_s = lookup_timeout_s
        self._t0 = clock.now() - timedelta(seconds=library.now / scale)
        self._seq = 0
        self._pending: deque[Event] = deque()  # converted, not yet delivered, in seq order
        self._sink: EventSink | None = None
        self._pushing = False
        self._lock = threading.RLock()
        self._closed = False
        self._read_log = read_log
        # shortest_locate: each batch reordered by locate time before the library gets it (read_order.py)
        self._shortest_locate = read_order == "shortest_locate"
        self._keys: set[str] = (
            set()
        )  # batch keys taken, kept only with a read log (disk answers bypass the library)
        self.content: FileContent = content if content is not None else GeneratedContent()
        self.writer = StagedWriter(self.content, library.faults)
        self._destinations: dict[str, str] = {}  # file key -> where its bytes go, until its end
        self._checksums: dict[str, str] = {}  # path -> adler32, computed once

    # --- clocks -------------------------------------------------------------------------------------------

    def library_time(self, when: datetime) -> float:
        """Library seconds at a clock time."""
        return (when - self._t0).total_seconds() * self._scale

    def clock_time(self, t: float) -> datetime:
        """Clock time of a library time."""
        return self._t0 + timedelta(seconds=t / self._scale)

    def advance(self) -> float:
        """Bring the library up to the clock's present and deliver what happened; the library time now."""
        with self._lock:
            self._check_open()
            # A wall clock stepped back must not move the library backwards.
            t = max(self.library.now, self.library_time(self._clock.now()))
            self._deliver(self.library.advance_to(t))
            return t

    # --- HsmAdapter ---------------------------------------------------------------------------------------

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        with self._lock:
            t = self.advance()
            if self.library.health(t) is Health.OFFLINE:
                return [Unknown(path, "the library is offline") for path in paths]
            latency = self.library.faults.latency_s(t)
            if latency > self._lookup_timeout_s:
                reason = f"no answer within {self._lookup_timeout_s:g} s: the library is slow"
                return [Unknown(path, reason) for path in paths]
            if self._read_log is not None:
                self._read_log.refresh()  # what another process sharing the log brought to disk
            results: list[LookupResult] = []
            for path in paths:
                entry = self.library.catalogue.get(path)
                if entry is None:
                    results.append(NotOnTape(path, "not in the library"))
                else:
                    on_disk = self._read_log is not None and path in self._read_log.on_disk
                    checksum = self._checksum(path, entry.size_bytes)
                    results.append(
                        OnTape(path, entry.tape, entry.position_bytes, entry.size_bytes, on_disk, checksum)
                    )
            return results

    def _checksum(self, path: str, size: int) -> str:
        known = self._checksums.get(path)
        if known is None:
            known = self._checksums[path] = self.content.checksum(path, size)
        return known

    def submit(self, batch: Batch) -> None:
        with self._lock:
            t = self.advance()
            if self._shortest_locate:
                batch = locate_order(self.library.physics, batch)
            if self._read_log is not None:
                self._submit_past_disk(batch, self._read_log, t)
                return
            self.library.submit(batch, t + self.library.faults.latency_s(t))
            self._remember_destinations(batch)
            self._deliver(self.library.take_events())

    def _remember_destinations(self, batch: Batch) -> None:
        """Called once the batch is accepted: its files' destinations, kept until each file ends."""
        for file in batch.files:
            if file.destination is not None:
                self._destinations[file.key] = file.destination

    def _submit_past_disk(self, batch: Batch, read_log: ReadLog, t: float) -> None:
        """Files on disk are answered at once; the rest of the batch goes to the library."""
        if batch.key in self._keys:
            return
        # asked now, not at the process's start: another process sharing the log (a leader that died
        # before its events were applied) may have brought these files to disk since
        read_log.refresh()
        cached = [f for f in batch.files if f.path in read_log.on_disk]
        rest = tuple(f for f in batch.files if f.path not in read_log.on_disk)
        if rest:
            self.library.submit(
                Batch(batch.key, batch.tape, rest, batch.service_class), t + self.library.faults.latency_s(t)
            )
        elif self.library.health(t) is Health.OFFLINE:
            raise Unavailable(f"the simulated library is offline; batch {batch.key!r} was not accepted")
        self._keys.add(batch.key)
        self._remember_destinations(batch)
        self._deliver(self.library.take_events())
        self._deliver([self._from_disk(f, batch, t) for f in cached], source=DISK)

    @staticmethod
    def _from_disk(file: BatchFile, batch: Batch, t: float) -> SimEvent:
        return SimEvent(
            EventKind.FILE_STAGED, t, batch.tape, None, file.key, file.path, batch.key, file.size_bytes
        )

    def cancel(self, file_keys: Sequence[str]) -> CancelResult:
        with self._lock:
            t = self.advance()
            result = self.library.cancel(file_keys, t)
            self._deliver(self.library.take_events())
            return result

    def evict(self, paths: Sequence[str]) -> None:
        """The disk copies are gone: lookup no longer says on disk, and a later batch of these paths reads
        them from tape again (with a read log, recorded there, so a later process knows too)."""
        with self._lock:
            if self._read_log is not None:
                self._read_log.evict(paths)

    def poll_events(self, limit: int | None = None) -> list[Event]:
        with self._lock:
            self.advance()
            count = len(self._pending) if limit is None else min(limit, len(self._pending))
            return [self._pending.popleft() for _ in range(count)]

    def set_sink(self, sink: EventSink | None) -> None:
        with self._lock:
            self._sink = sink
            self._push()

    def capacity(self) -> Capacity:
        with self._lock:
            return self.library.capacity(self.advance())

    def health(self) -> Health:
        with self._lock:
            return self.library.health(self.advance())

    # --- operators' hands (ControlsDrives, KnowsTapes) -----------------------------------------------------

    def drive_names(self) -> tuple[str, ...]:
        return self.library.drive_names

    def set_drive(self, drive: str, command: DriveCommand) -> None:
        with self._lock:
            t = self.advance()
            self.library.set_drive(drive, command, t)
            self._deliver(self.library.take_events())

    def knows_tape(self, tape: str) -> bool:
        tapes = self.library.catalogue.tapes  # sorted
        index = bisect_left(tapes, tape)
        return index < len(tapes) and tapes[index] == tape

    def describe(self) -> str:
        """One line for people: what this library is (the service's start-up banner prints it)."""
        catalogue = self.library.catalogue
        profile = self.library.physics.profile
        drives = self.library.drive_count
        size = decimal_size(catalogue.total_bytes())
        return (
            f"simulated {profile.name} library ({profile.description}): {drives} drive{'s' * (drives != 1)},"
            f" {len(catalogue.tapes)} tapes, {len(catalogue)} files, {size};"
            f" clock {self._scale:g}x the wall clock"
        )

    def library_costs(self) -> LibraryCosts:
        """The library's cost figures for policies (the scheduler looks for this method), in seconds of the
        service's clock: with scale 100 a 60 s mount costs the clock 0.6 s."""
        return library_costs(self.library.physics, self.library.robots).per_clock(self._scale)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._sink = None
            if self._read_log is not None:
                self._read_log.close()

    # --- internals ----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise Unavailable("the simulated library adapter is closed")

    def _deliver(self, events: list[SimEvent], *, source: str = TAPE) -> None:
        events = [self._land(sim) for sim in events]
        if self._read_log is not None:
            self._read_log.record(
                source, ((e.path, e.batch_key) for e in events if e.kind is EventKind.FILE_STAGED and e.path)
            )
        for sim in events:
            checksum = None
            if sim.kind is EventKind.FILE_STAGED and sim.path is not None:
                entry = self.library.catalogue.get(sim.path)
                checksum = self._checksum(entry.path, entry.size_bytes) if entry is not None else None
            self._seq += 1
            self._pending.append(
                Event(
                    kind=sim.kind,
                    at=self.clock_time(sim.t),
                    seq=self._seq,
                    tape=sim.tape,
                    drive=sim.drive,
                    file_key=sim.file_key,
                    path=sim.path,
                    batch_key=sim.batch_key,
                    bytes=sim.bytes,
                    reason=sim.reason,
                    retryable=sim.retryable,
                    checksum=checksum,
                )
            )
        self._push()

    def _land(self, sim: SimEvent) -> SimEvent:
        """A file's end: at FILE_STAGED its bytes go to the destination, if it has one; a write that fails
        turns the event into a retryable FILE_FAILED."""
        if sim.file_key is None or sim.kind not in _FILE_ENDS:
            return sim
        destination = self._destinations.pop(sim.file_key, None)
        if destination is None or sim.kind is not EventKind.FILE_STAGED or sim.path is None:
            return sim
        entry = self.library.catalogue.get(sim.path)
        if entry is None:  # a disk copy (read log) of a path this catalogue no longer holds
            reason = f"{sim.path} is not in the library: no bytes to write"
            return sim._replace(kind=EventKind.FILE_FAILED, bytes=0, reason=reason, retryable=False)
        failed = self.writer.write(entry.path, entry.size_bytes, destination, sim.t)
        if failed is None:
            return sim
        return sim._replace(kind=EventKind.FILE_FAILED, bytes=0, reason=failed, retryable=True)

    def _push(self) -> None:
        """Hand pending events to the sink in seq order. A sink that calls the adapter again only queues
        more behind them (the outer call keeps pushing); one that raises keeps its event for the next call."""
        if self._sink is None or self._pushing:
            return
        self._pushing = True
        try:
            while self._pending and self._sink is not None:
                self._sink(self._pending[0])
                self._pending.popleft()
        finally:
            self._pushing = False


# --- options and factory ------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GenerateOptions(_Strict):
    seed: int = 0
    cartridges: Annotated[int, Field(ge=1)] = 100
    files_per_cartridge: Annotated[int, Field(ge=1)] = 100
    size_model: str = "star2006"
    layout: Literal["packed", "spread"] = "packed"


class CatalogueOptions(_Strict):
    """Exactly one of: generate (a seeded catalogue), csv (a file path,size_bytes,tape,position_bytes) or
    directory (a directory of real files, one subdirectory per tape: directory.py)."""

    generate: GenerateOptions | None = None
    csv: str | None = None
    directory: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _path_alone(cls, value: object) -> object:
        # A bare string is the path of a CSV catalogue.
        return {"csv": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if [self.generate, self.csv, self.directory].count(None) != 2:
            raise ValueError("give exactly one of 'generate', 'csv' or 'directory'")
        return self


class SimulatedOptions(_Strict):
    """The options of `build_simulated_adapter` (documented in docs/simulated-library.md)."""

    profile: str = "lto9"
    drives: Annotated[int, Field(ge=1)] = 4
    robots: Annotated[int, Field(ge=1)] = 1
    discipline: Discipline = Discipline.TAPE_ORDERED
    queue_depth: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: {"default": 1000})
    dismount_delay_s: Annotated[float, Field(ge=0)] | None = None
    catalogue: CatalogueOptions = Field(default_factory=lambda: CatalogueOptions(generate=GenerateOptions()))
    scale: Annotated[float, Field(gt=0)] = 1.0
    faults: str | dict[str, object] | None = None
    new_media_fraction: Annotated[float, Field(ge=0, le=1)] = 0.0
    seed: int = 0  # picks the new cartridges
    lookup_timeout_s: Annotated[float, Field(gt=0)] = 10.0
    read_log: str | None = None  # a file: see hsm_adapters.simulated.read_log
    # the order the library reads each batch in: carousel's (head position), or the fewest locates found
    read_order: ReadOrderName = "position"
    # with shortest_locate: a batch for a cartridge with unread files merges with them, ordered from the head
    merge_batches: bool = False


def parse_options(options: Mapping[str, object]) -> SimulatedOptions:
    try:
        return SimulatedOptions.model_validate(dict(options))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '(options)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"simulated adapter options: {problems}") from exc


def build_simulated_adapter(options: Mapping[str, object], clock: Clock) -> SimulatedAdapter:
    """A SimulatedAdapter from plain options (the service's settings). Raises ConfigError naming the key."""
    parsed = parse_options(options)
    physics = TapePhysics(load_profile(parsed.profile))
    catalogue, content = _catalogue(parsed.catalogue, physics.profile)
    setup = LibrarySetup(
        discipline=parsed.discipline,
        queue_depth=parsed.queue_depth,
        read_order=parsed.read_order,
        merge_batches=parsed.merge_batches,
        robots=parsed.robots,
        dismount_delay_s=parsed.dismount_delay_s,
        new_media_fraction=parsed.new_media_fraction,
        faults=_fault_plan(parsed.faults),
    )
    library = build_library(physics, catalogue, drives=parsed.drives, setup=setup, seed=parsed.seed)
    return SimulatedAdapter(
        library,
        clock,
        scale=parsed.scale,
        lookup_timeout_s=parsed.lookup_timeout_s,
        read_log=ReadLog(parsed.read_log) if parsed.read_log is not None else None,
        read_order=setup.read_order,
        content=content,
    )


def _catalogue(source: CatalogueOptions, profile: DriveProfile) -> tuple[Catalogue, FileContent]:
    """The catalogue and where its files' bytes come from: real files for a directory, else generated."""
    if source.directory is not None:
        return directory_catalogue(source.directory, capacity_bytes=profile.capacity_bytes)
    if source.csv is not None:
        return load_catalogue_csv(source.csv, capacity_bytes=profile.capacity_bytes), GeneratedContent()
    assert source.generate is not None
    g = source.generate
    catalogue = generate_catalogue(
        g.seed, g.cartridges, g.files_per_cartridge, g.size_model, profile, layout=g.layout
    )
    return catalogue, GeneratedContent()


def _fault_plan(faults: str | dict[str, object] | None) -> FaultPlan | None:
    if isinstance(faults, str):
        return load_fault_plan(Path(faults))
    if faults is not None:
        return fault_plan_from_mapping(faults, source="simulated adapter option 'faults'")
    return None
