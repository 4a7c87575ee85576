"""The simulated library behind the HSM adapter protocol, on a scaled clock.

The library runs on its own seconds; the adapter maps them to the injected clock: library time
t = (clock.now() − t0) × scale, so scale 100 runs a hundred times faster than the wall clock, and a
ManualClock makes it run in virtual time (tests and the stepped service move the clock). Every call first
brings the library up to the clock's present and delivers the events that happened meanwhile, to the sink
if one is set (pushed during that call), otherwise kept for `poll_events`. Event times are mapped back:
at = t0 + t / scale.

With a read log (hsm_adapters.simulated.read_log), files the library brought to disk in an earlier process
are on disk: their submission is answered FILE_STAGED at once, without a tape read.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from carousel.domain.clock import Clock
from carousel.domain.errors import ConfigError, Unavailable
from carousel.domain.planning import LibraryCosts
from hsm_adapters.base import (
    Batch,
    BatchFile,
    CancelResult,
    Capacity,
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
from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.faults import FaultPlan, fault_plan_from_mapping, load_fault_plan
from hsm_adapters.simulated.library import Discipline, Library, SimEvent
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import DriveProfile, load_profile
from hsm_adapters.simulated.read_log import DISK, TAPE, ReadLog
from hsm_adapters.simulated.read_order import ReadOrderName, locate_order


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
            results: list[LookupResult] = []
            for path in paths:
                entry = self.library.catalogue.get(path)
                if entry is None:
                    results.append(NotOnTape(path, "not in the library"))
                else:
                    results.append(OnTape(path, entry.tape, entry.position_bytes, entry.size_bytes))
            return results

    def submit(self, batch: Batch) -> None:
        with self._lock:
            t = self.advance()
            if self._shortest_locate:
                batch = locate_order(self.library.physics, batch)
            if self._read_log is not None:
                self._submit_past_disk(batch, self._read_log, t)
                return
            self.library.submit(batch, t + self.library.faults.latency_s(t))
            self._deliver(self.library.take_events())

    def _submit_past_disk(self, batch: Batch, read_log: ReadLog, t: float) -> None:
        """Files on disk are answered at once; the rest of the batch goes to the library."""
        if batch.key in self._keys:
            return
        cached = [f for f in batch.files if f.path in read_log.on_disk]
        rest = tuple(f for f in batch.files if f.path not in read_log.on_disk)
        if rest:
            self.library.submit(
                Batch(batch.key, batch.tape, rest, batch.service_class), t + self.library.faults.latency_s(t)
            )
        elif self.library.health(t) is Health.OFFLINE:
            raise Unavailable(f"the simulated library is offline; batch {batch.key!r} was not accepted")
        self._keys.add(batch.key)
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
        """The disk copies are gone: a later batch of these paths reads them from tape again."""
        with self._lock:
            if self._read_log is not None:
                self._read_log.on_disk.difference_update(paths)

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
        if self._read_log is not None:
            self._read_log.record(
                source, ((e.path, e.batch_key) for e in events if e.kind is EventKind.FILE_STAGED and e.path)
            )
        for sim in events:
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
                )
            )
        self._push()

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
    """Exactly one of: generate (a seeded catalogue) or csv (a file path,size_bytes,tape,position_bytes)."""

    generate: GenerateOptions | None = None
    csv: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _path_alone(cls, value: object) -> object:
        # A bare string is the path of a CSV catalogue.
        return {"csv": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.generate is None) == (self.csv is None):
            raise ValueError("give exactly one of 'generate' or 'csv'")
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
    # the order the library reads each batch in: carousel's (head position), or shortest-locate-first
    read_order: ReadOrderName = "position"


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
    catalogue = _catalogue(parsed.catalogue, physics.profile)
    setup = LibrarySetup(
        discipline=parsed.discipline,
        queue_depth=parsed.queue_depth,
        read_order=parsed.read_order,
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
    )


def _catalogue(source: CatalogueOptions, profile: DriveProfile) -> Catalogue:
    if source.csv is not None:
        return load_catalogue_csv(source.csv, capacity_bytes=profile.capacity_bytes)
    assert source.generate is not None
    g = source.generate
    return generate_catalogue(
        g.seed, g.cartridges, g.files_per_cartridge, g.size_model, profile, layout=g.layout
    )


def _fault_plan(faults: str | dict[str, object] | None) -> FaultPlan | None:
    if isinstance(faults, str):
        return load_fault_plan(Path(faults))
    if faults is not None:
        return fault_plan_from_mapping(faults, source="simulated adapter option 'faults'")
    return None
