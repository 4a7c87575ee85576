"""The simulated tape library: a discrete-event engine on float seconds of library time (0 = start).

Cartridges come from a catalogue, times from one `TapePhysics`. Drives mount (robot + load), locate from the
head, pay a per-file overhead, read at the native rate, keep an idle cartridge mounted for the profile's
dismount delay, then rewind, unload and hand the cartridge back to a robot. Robots are a pool: a mount or a
dismount waits for the first free robot (first come, first served).

The HSM-side queue holds at most `queue_depth[class]` files per class of service (queued or being read); the
rest of a submission waits outside, in arrival order, and enters as files finish. Nothing is refused for
depth (HPSS keeps such requests queued); `capacity()` reports the slots left so a polite client stays within.

Disciplines, both honouring the order of the files inside each batch (carousel's order):
- `fifo`: files are taken in arrival order, one by one. A file of a cartridge that is mounted (or on its way
  to a drive) joins that drive's list; any other file needs a free drive and, while there is none, holds up
  every file behind it. No regrouping: an interleaved stream makes cartridges go back and forth.
- `tape_ordered` (HPSS Tape Order Recall): files are grouped by cartridge; the cartridge with most queued
  files is mounted first (ties: the one waiting longest); a mounted cartridge is served in head order: the
  next file is the first batch head at or after the head, else the lowest one.

When a drive is needed and none is empty, an idle drive is unloaded at once (the dismount delay only keeps a
cartridge that nobody else needs the drive for). Speed: about one heap event per file read (a file's start
is emitted when the drive commits to it, at the end of the previous one) and four per mount.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from operator import itemgetter
from typing import NamedTuple

from carousel.domain.errors import ConfigError, Unavailable
from hsm_adapters.base import Batch, CancelResult, Capacity, DriveCommand, EventKind, Health
from hsm_adapters.simulated.catalogue import Catalogue
from hsm_adapters.simulated.faults import NO_FAULTS, FaultPlan
from hsm_adapters.simulated.physics import TapePhysics


class Discipline(StrEnum):
    FIFO = "fifo"
    TAPE_ORDERED = "tape_ordered"


class SimEvent(NamedTuple):
    """What the library reports, at library time t (seconds)."""

    kind: EventKind
    t: float
    tape: str | None = None
    drive: str | None = None
    file_key: str | None = None
    path: str | None = None
    batch_key: str | None = None
    bytes: int = 0
    reason: str | None = None
    retryable: bool = True


@dataclass(frozen=True, slots=True)
class LibraryStats:
    now_s: float
    events: int  # engine events processed
    mounts: int
    files_staged: int
    files_failed: int
    files_cancelled: int
    bytes_staged: int
    overflow_files: int  # files that had to wait outside the queue depth
    robot_wait_s: float  # total time mounts and dismounts waited for a robot
    drive_busy_s: dict[str, float]  # holding or moving a cartridge (robot wait included)
    drive_read_s: dict[str, float]  # streaming data at the native rate
    cartridges_over_soft_limit: int
    cartridges_over_hard_limit: int


# Recall states
_BACKLOG, _QUEUED, _STARTED, _STAGED, _FAILED, _CANCELLED = range(6)
# Drive states
_EMPTY, _MOUNTING, _READING, _IDLE, _UNMOUNTING, _DOWN = range(6)
# Engine events; the first five belong to a drive and carry its generation (stale ones are skipped)
_FILE_DONE, _MOUNT_DONE, _IDLE_TIMEOUT, _UNLOADED, _DRIVE_FREE = range(5)
_ADMIT, _DRIVE_DOWN, _DRIVE_UP, _OFFLINE_START, _OFFLINE_END, _STALL_START, _STALL_END = range(5, 12)
_DRIVE_EVENTS = _DRIVE_FREE

_UNLIMITED = 1 << 62
# (head byte, positions, sizes) -> indices into positions in the order to read them (read_order.order_from)
MergeOrder = Callable[[int, list[int], list[int]], list[int]]
_head_position = itemgetter(0)


class _ServiceClass:
    __slots__ = ("active", "backlog", "depth", "waiting")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.active = 0  # queued or being read
        self.waiting = 0  # in the backlog, not cancelled
        self.backlog: deque[_Recall] = deque()


class _Run:
    """The admitted, unread files of one batch, in the batch's order."""

    __slots__ = ("files", "in_heads")

    def __init__(self) -> None:
        self.files: deque[_Recall] = deque()
        self.in_heads = False


class _Cartridge:
    __slots__ = (
        "bad",
        "candidate_seq",
        "changed",
        "disabled",
        "drive",
        "heads",
        "label",
        "leaving",
        "mounts",
        "queued",
    )

    def __init__(self, label: str, bad: bool) -> None:
        self.label = label
        self.bad = bad
        self.disabled = False  # after a failed mount: later recalls fail at once
        self.mounts = 0
        self.queued = 0  # admitted files not yet started
        self.drive: _Drive | None = None  # the drive holding it, loading it, or reserved to load it next
        self.leaving = False  # being rewound, unloaded and carried back
        self.candidate_seq = 0  # when it started waiting for a mount (tie-break)
        self.changed = False  # its queued count changed since the candidates heap last heard of it
        self.heads: list[tuple[int, int, _Run]] = []  # (position, seq, run) of each run's next file


class _Recall:
    __slots__ = ("batch_key", "key", "path", "position", "run", "seq", "service", "size", "state", "tape")

    def __init__(
        self,
        *,
        key: str,
        path: str,
        tape: _Cartridge,
        position: int,
        size: int,
        batch_key: str,
        service: _ServiceClass,
        run: _Run,
        seq: int,
    ) -> None:
        self.key = key
        self.path = path
        self.tape = tape
        self.position = position
        self.size = size
        self.batch_key = batch_key
        self.service = service
        self.run = run
        self.seq = seq
        self.state = _BACKLOG


class _Drive:
    __slots__ = (
        "admin_down",
        "assigned",
        "busy_s",
        "busy_since",
        "current",
        "fault_down",
        "gen",
        "head",
        "index",
        "mounted",
        "moved",
        "name",
        "next_tape",
        "read_s",
        "state",
        "tape",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.name = f"drive{index:02d}"
        self.state = _EMPTY
        self.gen = 0  # bumped whenever the drive's scheduled events no longer apply
        self.tape: _Cartridge | None = None
        self.next_tape: _Cartridge | None = None  # to load once the current one is out
        self.mounted = False  # MOUNTED was reported for the current cartridge
        self.head = 0
        self.moved = 0  # bytes read since load (LTO-9 rewind classes)
        self.current: _Recall | None = None
        self.assigned: deque[_Recall] = deque()  # fifo: files handed to this drive, in arrival order
        self.busy_since = -1.0
        self.busy_s = 0.0
        self.read_s = 0.0
        self.admin_down = False  # an operator took it down (or is taking it down after its mount)
        self.fault_down = False  # a drive outage of the fault plan holds it down


class Library:
    """One simulated tape library. Every public call takes the library time it happens at (never earlier
    than the last one); events up to that time are processed first."""

    def __init__(
        self,
        catalogue: Catalogue,
        physics: TapePhysics,
        *,
        drives: int,
        robots: int = 1,
        discipline: str = Discipline.TAPE_ORDERED,
        queue_depth: Mapping[str, int] | None = None,
        faults: FaultPlan | None = None,
        new_cartridges: Collection[str] = (),
        dismount_delay_s: float | None = None,
        merge_order: MergeOrder | None = None,
    ) -> None:
        if drives < 1:
            raise ConfigError(f"drives must be at least 1, got {drives}")
        if robots < 1:
            raise ConfigError(f"robots must be at least 1, got {robots}")
        try:
            self._tape_ordered = Discipline(discipline) is Discipline.TAPE_ORDERED
        except ValueError:
            known = ", ".join(d.value for d in Discipline)
            raise ConfigError(f"discipline {discipline!r} is not one of {known}") from None
        self.discipline = Discipline(discipline)
        depths = dict(queue_depth or {})
        for name, depth in depths.items():
            if depth < 1:
                raise ConfigError(f"queue_depth[{name!r}] must be at least 1, got {depth}")
        self.faults = faults or NO_FAULTS
        self.physics = physics
        profile = physics.profile
        self.catalogue = catalogue
        self._robot_s = profile.robot_exchange_s
        self._load_s = physics.mount_s() - profile.robot_exchange_s
        self._first_load_extra_s = physics.mount_s(first_load=True) - physics.mount_s()
        self._overhead_s = physics.overhead_s()
        self._rate = profile.rate_bytes_per_s
        self._dismount_delay_s = profile.dismount_delay_s if dismount_delay_s is None else dismount_delay_s
        if self._dismount_delay_s < 0:
            raise ConfigError(f"dismount_delay_s must be >= 0, got {self._dismount_delay_s}")
        self._mount_limits = (profile.mount_limit_soft, profile.mount_limit_hard)
        # tape_ordered: a batch for a cartridge that holds unread files is merged with them into one run,
        # in this order from the head (None: each batch stays a run of its own, served in head order)
        self._merge_order = merge_order if self._tape_ordered else None

        self._drives = [_Drive(i) for i in range(drives)]
        self._empty = list(range(drives))  # a heap of drive indices: the lowest empty drive is used first
        self._idle: dict[int, None] = {}  # idle drives, longest idle first
        self._robot_free = [0.0] * robots
        self._heap: list[tuple[float, int, int, int, int]] = []  # (time, seq, kind, drive or key, generation)
        self._seq = 0
        self._now = 0.0
        self._out: list[SimEvent] = []
        self._want_dispatch = False
        self._offline = False
        self._stalled = False  # a stall window: nothing starts, the library still says ONLINE
        # hung reads: path -> reads of it that will still hang (None: every one); drives holding a hung read
        self._hang_left: dict[str, int | None] = {h.path: h.reads for h in self.faults.hung_reads}
        self._hung: dict[str, _Drive] = {}  # file key -> drive stuck on it

        self._depths = depths
        self._classes: dict[str, _ServiceClass] = {name: _ServiceClass(d) for name, d in depths.items()}
        self._cartridges: dict[str, _Cartridge] = {}
        self._recalls: dict[str, _Recall] = {}  # recalls not yet ended, by file key
        # Ended recalls keep only their key (True: cancelled), so a million finished files cost little.
        self._ended: dict[str, bool] = {}
        self._batch_keys: set[str] = set()
        self._arriving: dict[int, Batch] = {}  # batches submitted for a later time, by event seq
        self._fifo: deque[_Recall] = deque()
        self._candidates: list[tuple[int, int, _Cartridge]] = []  # heap: (-queued, waiting since, cartridge)
        self._changed: list[_Cartridge] = []  # to push into the heap once, however many files arrived

        self._bad = self.faults.pick_bad_cartridges(catalogue.tapes)
        self._new_media = frozenset(new_cartridges)
        self._read_error_p = self.faults.read_error_probability
        self._fault_rng = random.Random(f"read-errors:{self.faults.seed}")

        self._events = 0
        self._mounts = 0
        self._staged = 0
        self._failed = 0
        self._cancelled = 0
        self._bytes_staged = 0
        self._overflow = 0
        self._robot_wait_s = 0.0
        self._schedule_faults()

    # --- public API ---------------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self._now

    @property
    def drive_count(self) -> int:
        return len(self._drives)

    @property
    def robots(self) -> int:
        return len(self._robot_free)

    @property
    def drive_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self._drives)

    def set_drive(self, name: str, command: DriveCommand, at: float) -> None:
        """An operator's command at library time `at`. Down after its mount: the drive reads what its
        cartridge holds for it (files that join meanwhile included), unmounts and stays down. Down now: as a
        drive failure, its read goes back to the queue. Up: back in service (unless a fault holds it down).
        KeyError for a drive the library does not have."""
        self._check_time(at)
        self._run(at)
        drive = next((d for d in self._drives if d.name == name), None)
        if drive is None:
            raise KeyError(name)
        if command is DriveCommand.UP:
            drive.admin_down = False
            if drive.state == _DOWN and not drive.fault_down:
                self._drive_up(drive)
        else:
            drive.admin_down = True
            if command is DriveCommand.DOWN_NOW or drive.state == _EMPTY:
                if drive.state != _DOWN:
                    self._drive_down(drive, at)
            elif drive.state == _IDLE:
                self._start_unmount(drive, at)
            # mounting, reading or unmounting: it goes down when its cartridge is back in its slot
        if self._want_dispatch:
            self._dispatch(at)

    def submit(self, batch: Batch, at: float) -> None:
        """Accept a batch at library time `at` (later than now: it reaches the library then).
        Idempotent by batch key. Refused (Unavailable) while the library is offline."""
        self._check_time(at)
        if self.faults.is_offline(at):
            raise Unavailable(f"the simulated library is offline; batch {batch.key!r} was not accepted")
        if batch.key in self._batch_keys:
            return
        self._batch_keys.add(batch.key)
        if at > self._now:
            seq = self._push(at, _ADMIT, 0, 0)
            self._arriving[seq] = batch
            return
        self._run(at)
        self._accept(batch, at)
        if self._want_dispatch:
            self._dispatch(at)

    def cancel(self, file_keys: Iterable[str], at: float) -> CancelResult:
        """Stop files that have not started. Started or finished ones are `in_progress`: their events come."""
        self._check_time(at)
        self._run(at)
        if self._offline:
            raise Unavailable("the simulated library is offline; cancel was not accepted")
        cancelled: list[str] = []
        in_progress: list[str] = []
        unknown: list[str] = []
        for key in file_keys:
            recall = self._recalls.get(key)
            if recall is None:
                ended = self._ended.get(key)
                (unknown if ended is None else cancelled if ended else in_progress).append(key)
            elif recall.state <= _QUEUED:
                self._cancel(recall, at)
                cancelled.append(key)
            elif key in self._hung:
                self._abandon_hung(recall, at)
                cancelled.append(key)
            else:
                in_progress.append(key)
        if self._want_dispatch:
            self._dispatch(at)
        return CancelResult(tuple(cancelled), tuple(in_progress), tuple(unknown))

    def advance_to(self, t: float) -> list[SimEvent]:
        """Process everything up to library time t; the events since the last call, oldest first."""
        self._check_time(t)
        self._run(t)
        return self.take_events()

    def run_until_idle(self) -> list[SimEvent]:
        """Process every scheduled event (the clock stops at the last one)."""
        self._run(math.inf)
        return self.take_events()

    def take_events(self) -> list[SimEvent]:
        events, self._out = self._out, []
        return events

    def next_event_time(self) -> float | None:
        heap = self._heap
        drives = self._drives
        while heap and heap[0][2] <= _DRIVE_EVENTS and drives[heap[0][3]].gen != heap[0][4]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def capacity(self, at: float) -> Capacity:
        self._check_time(at)
        self._run(at)
        in_service = [d for d in self._drives if d.state != _DOWN]
        free = 0 if self._offline else sum(1 for d in in_service if d.state in (_EMPTY, _IDLE))
        slots = {
            name: max(0, self._classes[name].depth - self._classes[name].active - self._classes[name].waiting)
            for name in self._depths
        }
        mounted = tuple(d.tape.label for d in self._drives if d.mounted and d.tape is not None)
        return Capacity(
            drives_total=len(in_service), drives_free=free, queue_slots=slots, mounted_tapes=mounted
        )

    def health(self, at: float) -> Health:
        self._check_time(at)
        self._run(at)
        if self._offline:
            return Health.OFFLINE
        # a drive an operator took down is maintenance, not a fault
        if any(d.state == _DOWN and not d.admin_down for d in self._drives) or self.faults.latency_s(at) > 0:
            return Health.DEGRADED
        return Health.ONLINE

    def mount_counts(self) -> dict[str, int]:
        """Mounts per cartridge (wear), for the cartridges mounted at least once."""
        return {label: c.mounts for label, c in self._cartridges.items() if c.mounts}

    def stats(self) -> LibraryStats:
        now = self._now
        soft, hard = self._mount_limits
        return LibraryStats(
            now_s=now,
            events=self._events,
            mounts=self._mounts,
            files_staged=self._staged,
            files_failed=self._failed,
            files_cancelled=self._cancelled,
            bytes_staged=self._bytes_staged,
            overflow_files=self._overflow,
            robot_wait_s=self._robot_wait_s,
            drive_busy_s={
                d.name: d.busy_s + (now - d.busy_since if d.busy_since >= 0 else 0.0) for d in self._drives
            },
            drive_read_s={d.name: d.read_s for d in self._drives},
            cartridges_over_soft_limit=sum(1 for c in self._cartridges.values() if c.mounts > soft),
            cartridges_over_hard_limit=sum(1 for c in self._cartridges.values() if c.mounts > hard),
        )

    # --- the event loop -----------------------------------------------------------------------------------

    def _check_time(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"library time runs forward: {t} is before {self._now}")

    def _push(self, t: float, kind: int, index: int, gen: int) -> int:
        self._seq = seq = self._seq + 1
        heapq.heappush(self._heap, (t, seq, kind, index, gen))
        return seq

    def _run(self, until: float) -> None:
        heap = self._heap
        drives = self._drives
        pop = heapq.heappop
        while heap and heap[0][0] <= until:
            t, seq, kind, index, gen = pop(heap)
            self._now = t
            self._events += 1
            if kind <= _DRIVE_EVENTS:
                drive = drives[index]
                if drive.gen != gen:
                    continue
                if kind == _FILE_DONE:
                    self._file_done(drive, t)
                elif kind == _MOUNT_DONE:
                    self._mount_done(drive, t)
                elif kind == _IDLE_TIMEOUT:
                    self._start_unmount(drive, t)
                elif kind == _UNLOADED:
                    self._push(self._robot(t) + self._robot_s, _DRIVE_FREE, index, drive.gen)
                else:
                    self._drive_free(drive, t)
            elif kind == _ADMIT:
                self._accept(self._arriving.pop(seq), t)
            elif kind == _DRIVE_DOWN:
                drives[index].fault_down = True
                if drives[index].state != _DOWN:
                    self._drive_down(drives[index], t)
            elif kind == _DRIVE_UP:
                drives[index].fault_down = False
                if not drives[index].admin_down:
                    self._drive_up(drives[index])
            elif kind == _OFFLINE_START:
                self._offline = True
            elif kind == _STALL_START:
                self._stalled = True
            else:
                if kind == _OFFLINE_END:
                    self._offline = False
                else:
                    self._stalled = False
                for drive in drives:
                    if drive.state == _IDLE:
                        self._drive_next(drive, t)
                self._want_dispatch = True
            if self._want_dispatch:
                self._dispatch(t)
        if until != math.inf and until > self._now:
            self._now = until

    def _schedule_faults(self) -> None:
        by_name = {d.name: d.index for d in self._drives}
        for number, outage in enumerate(self.faults.drive_outages):
            if outage.drive not in by_name:
                raise ConfigError(
                    f"faults.drive_outages[{number}].drive: no drive {outage.drive!r}"
                    f" (drives are {', '.join(by_name)})"
                )
            self._push(outage.start_s, _DRIVE_DOWN, by_name[outage.drive], 0)
            self._push(outage.end_s, _DRIVE_UP, by_name[outage.drive], 0)
        for window in self.faults.offline_windows:
            self._push(window.start_s, _OFFLINE_START, 0, 0)
            self._push(window.end_s, _OFFLINE_END, 0, 0)
        for window in self.faults.stall_windows:
            self._push(window.start_s, _STALL_START, 0, 0)
            self._push(window.end_s, _STALL_END, 0, 0)

    # --- admission and cancel -----------------------------------------------------------------------------

    def _cartridge(self, label: str) -> _Cartridge:
        cartridge = self._cartridges.get(label)
        if cartridge is None:
            cartridge = self._cartridges[label] = _Cartridge(label, label in self._bad)
        return cartridge

    def _service(self, name: str) -> _ServiceClass:
        service = self._classes.get(name)
        if service is None:
            service = self._classes[name] = _ServiceClass(_UNLIMITED)
        return service

    def _accept(self, batch: Batch, t: float) -> None:
        service = self._service(batch.service_class)
        cartridge = self._cartridge(batch.tape)
        if cartridge.disabled and batch.files:  # the library will not try the bad cartridge again
            self._out.append(
                SimEvent(EventKind.MOUNT_FAILED, t, cartridge.label, reason=self._bad_reason(cartridge))
            )
        run = _Run()
        recalls = self._recalls
        for file in batch.files:
            entry = self.catalogue.get(file.path)
            if entry is None:
                self._reject(file.key, file.path, batch, t, f"{file.path} is not in the library")
                continue
            if entry.tape != batch.tape:
                reason = f"{file.path} is on tape {entry.tape}, not on {batch.tape}"
                self._reject(file.key, file.path, batch, t, reason)
                continue
            if file.key in recalls:
                continue  # already held: its events will come
            self._seq = seq = self._seq + 1
            recall = _Recall(
                key=file.key,
                path=file.path,
                tape=cartridge,
                position=entry.position_bytes,
                size=entry.size_bytes,
                batch_key=batch.key,
                service=service,
                run=run,
                seq=seq,
            )
            recalls[file.key] = recall
            if service.waiting or service.active >= service.depth:
                service.backlog.append(recall)
                service.waiting += 1
                self._overflow += 1
            else:
                self._admit(recall, t)
        if self._merge_order is not None and len(cartridge.heads) > 1:
            self._merge_runs(cartridge, self._merge_order)

    def _merge_runs(self, cartridge: _Cartridge, merge_order: MergeOrder) -> None:
        """The unread files of every run of the cartridge, in one run ordered from where its head is (the
        load point unless a drive holds it mounted): a batch that arrives while the cartridge is read joins
        the pass instead of waiting for a pass of its own. Nothing is dropped or added, only reordered."""
        runs = [run for _, _, run in cartridge.heads]
        recalls = [recall for run in runs for recall in run.files if recall.state == _QUEUED]
        drive = cartridge.drive
        mounted = drive is not None and drive.mounted and drive.tape is cartridge and not cartridge.leaving
        head = drive.head if drive is not None and mounted else 0
        order = merge_order(head, [r.position for r in recalls], [r.size for r in recalls])
        merged = _Run()
        for index in order:
            recall = recalls[index]
            recall.run = merged
            merged.files.append(recall)
        for run in runs:
            run.files.clear()
            run.in_heads = False
        cartridge.heads.clear()
        if merged.files:
            merged.in_heads = True
            first = merged.files[0]
            cartridge.heads.append((first.position, first.seq, merged))

    def _reject(self, key: str, path: str, batch: Batch, t: float, reason: str) -> None:
        self._failed += 1
        if key not in self._recalls:
            self._ended[key] = False
        self._out.append(
            SimEvent(EventKind.FILE_FAILED, t, batch.tape, None, key, path, batch.key, 0, reason, False)
        )

    def _admit(self, recall: _Recall, t: float) -> None:
        cartridge = recall.tape
        if cartridge.disabled:  # fails without taking a queue slot
            recall.state = _FAILED
            self._report_failed(recall, None, t, self._disabled_reason(cartridge), retryable=False)
            return
        recall.service.active += 1
        recall.state = _QUEUED
        cartridge.queued += 1
        if not self._tape_ordered:
            self._fifo.append(recall)
            self._want_dispatch = True
            return
        run = recall.run
        run.files.append(recall)
        if not run.in_heads:
            run.in_heads = True
            insort(cartridge.heads, (recall.position, recall.seq, run))
        drive = cartridge.drive
        if drive is None:
            if cartridge.queued == 1:
                cartridge.candidate_seq = recall.seq
            self._candidate_changed(cartridge)
        elif drive.state == _IDLE and drive.tape is cartridge:
            self._drive_next(drive, t)

    def _cancel(self, recall: _Recall, t: float) -> None:
        if recall.state == _BACKLOG:
            recall.service.waiting -= 1
        else:
            cartridge = recall.tape
            cartridge.queued -= 1
            if self._tape_ordered and cartridge.drive is None and cartridge.queued:
                self._candidate_changed(cartridge)
            self._release(recall.service, t)
        recall.state = _CANCELLED
        self._cancelled += 1
        del self._recalls[recall.key]
        self._ended[recall.key] = True
        self._out.append(
            SimEvent(
                EventKind.FILE_CANCELLED,
                t,
                recall.tape.label,
                None,
                recall.key,
                recall.path,
                recall.batch_key,
                0,
                "cancelled before it was read",
                True,
            )
        )

    def _release(self, service: _ServiceClass, t: float) -> None:
        """A held file is done: let the backlog in."""
        service.active -= 1
        backlog = service.backlog
        while service.waiting and service.active < service.depth:
            recall = backlog.popleft()
            if recall.state == _BACKLOG:
                service.waiting -= 1
                self._admit(recall, t)

    # --- choosing what to mount ---------------------------------------------------------------------------

    def _dispatch(self, t: float) -> None:
        self._want_dispatch = False
        if self._offline or self._stalled:
            return
        if self._tape_ordered:
            self._dispatch_ordered(t)
        else:
            self._dispatch_fifo(t)

    def _take_empty_drive(self) -> _Drive | None:
        empty = self._empty
        while empty:
            drive = self._drives[heapq.heappop(empty)]
            if drive.state == _EMPTY:
                return drive
        return None

    def _exchange_idle_drive(self, cartridge: _Cartridge, t: float) -> bool:
        """Unload the drive idle the longest and reserve it for `cartridge`. False when no drive is idle."""
        if not self._idle:
            return False
        drive = self._drives[next(iter(self._idle))]
        cartridge.drive = drive
        drive.next_tape = cartridge
        self._start_unmount(drive, t)
        return True

    def _candidate_changed(self, cartridge: _Cartridge) -> None:
        if not cartridge.changed:
            cartridge.changed = True
            self._changed.append(cartridge)
        self._want_dispatch = True

    def _dispatch_ordered(self, t: float) -> None:
        candidates = self._candidates
        for cartridge in self._changed:
            cartridge.changed = False
            if cartridge.drive is None and cartridge.queued and not cartridge.disabled:
                heapq.heappush(candidates, (-cartridge.queued, cartridge.candidate_seq, cartridge))
        self._changed.clear()
        while candidates:
            negative_queued, waiting_since, cartridge = candidates[0]
            if (
                cartridge.drive is not None
                or cartridge.disabled
                or cartridge.queued != -negative_queued
                or cartridge.candidate_seq != waiting_since
            ):
                heapq.heappop(candidates)
                continue
            drive = self._take_empty_drive()
            if drive is not None:
                heapq.heappop(candidates)
                self._start_mount(drive, cartridge, t)
            elif self._exchange_idle_drive(cartridge, t):
                heapq.heappop(candidates)
            else:
                return

    def _dispatch_fifo(self, t: float) -> None:
        queue = self._fifo
        while queue:
            recall = queue[0]
            if recall.state != _QUEUED:
                queue.popleft()
                continue
            cartridge = recall.tape
            if cartridge.disabled:
                queue.popleft()
                self._fail_queued(recall, None, t, self._disabled_reason(cartridge))
                continue
            drive = cartridge.drive
            if drive is not None:
                if cartridge.leaving:
                    return  # wait until the cartridge is back in its slot; everything behind waits too
                queue.popleft()
                drive.assigned.append(recall)
                if drive.state == _IDLE and drive.tape is cartridge:
                    self._drive_next(drive, t)
                continue
            drive = self._take_empty_drive()
            if drive is not None:
                queue.popleft()
                drive.assigned.append(recall)
                self._start_mount(drive, cartridge, t)
            elif self._exchange_idle_drive(cartridge, t):
                queue.popleft()
                assert cartridge.drive is not None
                cartridge.drive.assigned.append(recall)
            else:
                return

    # --- a drive's life -----------------------------------------------------------------------------------

    def _robot(self, t: float) -> float:
        """Take the first free robot at time t; when its move starts."""
        free = self._robot_free
        index = free.index(min(free))
        start = free[index] if free[index] > t else t
        free[index] = start + self._robot_s
        self._robot_wait_s += start - t
        return start

    def _start_mount(self, drive: _Drive, cartridge: _Cartridge, t: float) -> None:
        drive.state = _MOUNTING
        drive.tape = cartridge
        drive.next_tape = None
        cartridge.drive = drive
        first_load = cartridge.mounts == 0 and cartridge.label in self._new_media
        cartridge.mounts += 1
        self._mounts += 1
        if drive.busy_since < 0:
            drive.busy_since = t
        done = self._robot(t) + self._robot_s + self._load_s
        if first_load:
            done += self._first_load_extra_s
        self._push(done, _MOUNT_DONE, drive.index, drive.gen)

    def _mount_done(self, drive: _Drive, t: float) -> None:
        cartridge = drive.tape
        assert cartridge is not None
        drive.head = 0
        drive.moved = 0
        if cartridge.bad:
            cartridge.disabled = True
            self._out.append(
                SimEvent(
                    EventKind.MOUNT_FAILED, t, cartridge.label, drive.name, reason=self._bad_reason(cartridge)
                )
            )
            self._fail_cartridge(drive, cartridge, t)
            self._start_unmount(drive, t)
            return
        drive.mounted = True
        self._out.append(SimEvent(EventKind.MOUNTED, t, cartridge.label, drive.name))
        self._drive_next(drive, t)

    def _drive_next(self, drive: _Drive, t: float) -> None:
        """The drive holds its cartridge and is ready: start the next file, or stay idle."""
        cartridge = drive.tape
        assert cartridge is not None
        recall: _Recall | None = None
        if not (self._offline or self._stalled):
            recall = (
                self._next_ordered(cartridge, drive.head)
                if self._tape_ordered
                else self._next_assigned(drive)
            )
        if recall is None:
            if drive.admin_down:  # taken down after its mount: the mount is over
                self._start_unmount(drive, t)
                self._want_dispatch = True
                return
            if drive.state != _IDLE:
                drive.state = _IDLE
                self._idle[drive.index] = None
                drive.gen += 1
                self._push(t + self._dismount_delay_s, _IDLE_TIMEOUT, drive.index, drive.gen)
                self._want_dispatch = True  # a waiting cartridge may take this drive
            return
        if drive.state == _IDLE:
            del self._idle[drive.index]
            drive.gen += 1  # the dismount timer no longer applies
        drive.state = _READING
        recall.state = _STARTED
        cartridge.queued -= 1
        read_s = recall.size / self._rate
        busy_s = self.physics.locate_s(drive.head, recall.position) + self._overhead_s + read_s
        drive.read_s += read_s
        drive.head = recall.position + recall.size
        drive.moved += recall.size
        drive.current = recall
        self._out.append(
            SimEvent(
                EventKind.FILE_STARTED,
                t,
                cartridge.label,
                drive.name,
                recall.key,
                recall.path,
                recall.batch_key,
            )
        )
        if self._hangs(recall.path):
            self._hung[recall.key] = drive  # no end is scheduled: the drive stays on it until a cancel
            return
        self._push(t + busy_s, _FILE_DONE, drive.index, drive.gen)

    def _hangs(self, path: str) -> bool:
        if path not in self._hang_left:
            return False
        left = self._hang_left[path]
        if left is not None:
            if left <= 0:
                return False
            self._hang_left[path] = left - 1
        return True

    def _abandon_hung(self, recall: _Recall, t: float) -> None:
        """A cancel reaches a hung read: the drive gives it up and goes on with its cartridge."""
        drive = self._hung.pop(recall.key)
        drive.current = None
        recall.state = _CANCELLED
        self._cancelled += 1
        del self._recalls[recall.key]
        self._ended[recall.key] = True
        self._out.append(
            SimEvent(
                EventKind.FILE_CANCELLED,
                t,
                recall.tape.label,
                drive.name,
                recall.key,
                recall.path,
                recall.batch_key,
                0,
                "read abandoned: cancelled while it hung",
                True,
            )
        )
        self._release(recall.service, t)
        self._drive_next(drive, t)

    def _next_ordered(self, cartridge: _Cartridge, head: int) -> _Recall | None:
        heads = cartridge.heads
        while heads:
            index = bisect_left(heads, head, key=_head_position)
            _, _, run = heads.pop(index if index < len(heads) else 0)
            files = run.files
            recall = files.popleft()
            while files and files[0].state != _QUEUED:
                files.popleft()
            if files:
                following = files[0]
                insort(heads, (following.position, following.seq, run))
            else:
                run.in_heads = False
            if recall.state == _QUEUED:
                return recall
        return None

    @staticmethod
    def _next_assigned(drive: _Drive) -> _Recall | None:
        assigned = drive.assigned
        while assigned:
            recall = assigned.popleft()
            if recall.state == _QUEUED:
                return recall
        return None

    def _file_done(self, drive: _Drive, t: float) -> None:
        recall = drive.current
        cartridge = drive.tape
        assert recall is not None and cartridge is not None
        drive.current = None
        if self._read_error_p and self._fault_rng.random() < self._read_error_p:
            recall.state = _FAILED
            reason = f"read error on {cartridge.label} at byte {recall.position}"
            self._finish_failed(recall, drive.name, t, reason, retryable=True)
        else:
            recall.state = _STAGED
            self._staged += 1
            self._bytes_staged += recall.size
            del self._recalls[recall.key]
            self._ended[recall.key] = False
            self._out.append(
                SimEvent(
                    EventKind.FILE_STAGED,
                    t,
                    cartridge.label,
                    drive.name,
                    recall.key,
                    recall.path,
                    recall.batch_key,
                    recall.size,
                )
            )
            self._release(recall.service, t)
        self._drive_next(drive, t)

    def _finish_failed(
        self, recall: _Recall, drive: str | None, t: float, reason: str, retryable: bool
    ) -> None:
        """Report a failed recall that held a queue slot, and free the slot."""
        self._report_failed(recall, drive, t, reason, retryable)
        self._release(recall.service, t)

    def _report_failed(
        self, recall: _Recall, drive: str | None, t: float, reason: str, retryable: bool
    ) -> None:
        self._failed += 1
        del self._recalls[recall.key]
        self._ended[recall.key] = False
        self._out.append(
            SimEvent(
                EventKind.FILE_FAILED,
                t,
                recall.tape.label,
                drive,
                recall.key,
                recall.path,
                recall.batch_key,
                0,
                reason,
                retryable,
            )
        )

    def _fail_queued(self, recall: _Recall, drive: str | None, t: float, reason: str) -> None:
        recall.state = _FAILED
        recall.tape.queued -= 1
        self._finish_failed(recall, drive, t, reason, retryable=False)

    @staticmethod
    def _disabled_reason(cartridge: _Cartridge) -> str:
        return f"cartridge {cartridge.label} is disabled: it could not be mounted (bad cartridge)"

    @staticmethod
    def _bad_reason(cartridge: _Cartridge) -> str:
        return f"cartridge {cartridge.label} could not be mounted (bad cartridge)"

    def _fail_cartridge(self, drive: _Drive, cartridge: _Cartridge, t: float) -> None:
        """The cartridge cannot be mounted: every file queued for it fails for good."""
        reason = self._bad_reason(cartridge)
        if self._tape_ordered:
            runs = [run for _, _, run in cartridge.heads]
            cartridge.heads.clear()
            for run in runs:
                run.in_heads = False
                files = list(run.files)
                run.files.clear()
                for recall in files:
                    if recall.state == _QUEUED:
                        self._fail_queued(recall, drive.name, t, reason)
        else:
            files = list(drive.assigned)
            drive.assigned.clear()
            for recall in files:
                if recall.state == _QUEUED:
                    self._fail_queued(recall, drive.name, t, reason)

    def _start_unmount(self, drive: _Drive, t: float) -> None:
        cartridge = drive.tape
        assert cartridge is not None
        if drive.state == _IDLE:
            del self._idle[drive.index]
        drive.state = _UNMOUNTING
        drive.gen += 1
        # fifo: files handed to this drive but not read (the library went offline) go back to the front
        self._fifo.extendleft(reversed([r for r in drive.assigned if r.state == _QUEUED]))
        drive.assigned.clear()
        cartridge.leaving = True
        unload_s = self.physics.unmount_s(drive.head, drive.moved) - self._robot_s
        self._push(t + unload_s, _UNLOADED, drive.index, drive.gen)

    def _drive_free(self, drive: _Drive, t: float) -> None:
        """The cartridge is back in its slot; the drive loads the reserved one or becomes empty."""
        cartridge = drive.tape
        assert cartridge is not None
        if drive.mounted:
            drive.mounted = False
            self._out.append(SimEvent(EventKind.UNMOUNTED, t, cartridge.label, drive.name, bytes=drive.moved))
        cartridge.drive = None
        cartridge.leaving = False
        drive.tape = None
        self._back_in_slot(cartridge)
        following = drive.next_tape
        if drive.admin_down:  # taken down after its mount: the cartridge reserved for it waits for another
            drive.next_tape = None
            if following is not None:
                following.drive = None
                self._back_in_slot(following)
            # fifo: files handed to it for the reserved cartridge go back to the front of the queue
            self._fifo.extendleft(reversed([r for r in drive.assigned if r.state == _QUEUED]))
            drive.assigned.clear()
            drive.state = _DOWN
            drive.busy_s += t - drive.busy_since
            drive.busy_since = -1.0
        elif following is not None:
            self._start_mount(drive, following, t)
        else:
            drive.state = _EMPTY
            drive.busy_s += t - drive.busy_since
            drive.busy_since = -1.0
            heapq.heappush(self._empty, drive.index)
        self._want_dispatch = True

    def _back_in_slot(self, cartridge: _Cartridge) -> None:
        if self._tape_ordered and cartridge.queued and not cartridge.disabled:
            self._seq += 1
            cartridge.candidate_seq = self._seq
            self._candidate_changed(cartridge)

    def _drive_up(self, drive: _Drive) -> None:
        drive.state = _EMPTY
        heapq.heappush(self._empty, drive.index)
        self._want_dispatch = True

    def _drive_down(self, drive: _Drive, t: float) -> None:
        """The drive fails: its cartridge is taken out, its unfinished work goes back to the queue."""
        drive.gen += 1
        if drive.state == _IDLE:
            del self._idle[drive.index]
        requeue: list[_Recall] = []
        recall = drive.current
        if recall is not None:
            drive.current = None
            self._hung.pop(recall.key, None)  # a hung read ends with its drive; read again, it may hang again
            recall.state = _QUEUED
            recall.tape.queued += 1
            requeue.append(recall)
        if drive.mounted and drive.tape is not None:
            drive.mounted = False
            self._out.append(
                SimEvent(
                    EventKind.UNMOUNTED,
                    t,
                    drive.tape.label,
                    drive.name,
                    bytes=drive.moved,
                    reason="drive down",
                )
            )
        if self._tape_ordered:
            for recall in requeue:
                run = _Run()
                run.files.append(recall)
                run.in_heads = True
                recall.run = run
                insort(recall.tape.heads, (recall.position, recall.seq, run))
        else:
            requeue.extend(r for r in drive.assigned if r.state == _QUEUED)
            drive.assigned.clear()
            self._fifo.extendleft(reversed(requeue))
        for cartridge in (drive.tape, drive.next_tape):
            if cartridge is not None:
                cartridge.drive = None
                cartridge.leaving = False
                self._back_in_slot(cartridge)
        drive.tape = None
        drive.next_tape = None
        if drive.busy_since >= 0:
            drive.busy_s += t - drive.busy_since
            drive.busy_since = -1.0
        drive.state = _DOWN
        self._want_dispatch = True
