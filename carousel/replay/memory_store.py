"""The replay's queue store: the service's queue semantics over memory.

It answers the planning path exactly as the database store does (`carousel.scheduler.queue_store`): the
same per-tape demand (due queued files, oldest arrival, highest priority, per group; tapes in flight), the
same claim order (tape then position then id, or arrival then id), the same byte budget rule, the same
hand-over. It also plays intake (one recall per path; a later request for a path being recalled joins it,
one for a path already on disk is answered at once) and completion (the service's one completion rule,
`carousel.domain.completion`), and keeps what the outputs need: each request row's outcome and the mounts.

Per tape, queued files are kept in head order and the tape's demand is rebuilt only when it changed, so a
cycle costs about one step per tape with work.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from carousel.completion.read_end import read_end
from carousel.domain.buffer import BufferLimits, epoch_s, fitting
from carousel.domain.completion import Counted, RetryRule, holds_attempt, read_ended
from carousel.domain.libraries import DEFAULT_LIBRARY
from carousel.domain.planning import GroupDemand, GroupUsage, ReadOrder, Selection, TapeDemand, TapeInFlight
from carousel.domain.queue import ClaimedFile, HandedOver, QueueDemand, Reading, split_mount_time
from carousel.domain.states import CLAIM, FILE_ACTIVE, GIVE_BACK, HAND_OVER, FileState
from carousel.replay.memory_buffer import MemoryBuffer
from carousel.scheduler.eviction_notice import Evicted
from carousel.scheduler.queue_store import Claim
from hsm_adapters.base import Event, EventKind

SERVICE_CLASS = "default"  # traces carry no class of service
TapeKey = tuple[str, str]  # (library, tape): tape ids are unique per library (docs/decisions.md §17)


@dataclass(slots=True)
class RowOutcome:
    """One trace row (one requester's view of one file), as files.csv reports it."""

    state: FileState | None = None  # None while pending
    start: datetime | None = None
    end: datetime | None = None
    mount: int | None = None
    drive: str | None = None


@dataclass(slots=True)
class MountRecord:
    number: int
    tape: str
    drive: str | None
    mounted: datetime
    requested: datetime | None = None  # when the earliest file read in it was handed to the library
    unmounted: datetime | None = None
    files: int = 0
    bytes: int = 0
    started_by_group: dict[str, int] = field(default_factory=dict)
    library: str = DEFAULT_LIBRARY


@dataclass(slots=True)
class _File:
    id: int
    path: str
    tape: str
    position: int
    size: int
    group: str
    priority: int
    queued_at: datetime
    state: FileState = FileState.QUEUED
    not_before: datetime | None = None
    attempts: int = 0
    batch_key: str | None = None
    submitted_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None  # when its recall reached its end
    mount: int | None = None
    drive: str | None = None
    waiters: list[int] = field(default_factory=list)  # rows pending on this recall
    library: str = DEFAULT_LIBRARY

    @property
    def key(self) -> TapeKey:
        return (self.library, self.tape)

    @property
    def wanted(self) -> bool:
        """Its requesters all wait until it ends (the replay cancels nothing): the completion rule asks."""
        return bool(self.waiters)


class _Tape:
    __slots__ = ("demand", "in_flight", "library", "name", "queued")

    queued: list[tuple[int, int]]
    in_flight: dict[str, list[int]]
    demand: TapeDemand | None

    def __init__(self, library: str, name: str) -> None:
        self.library = library
        self.name = name
        self.queued: list[tuple[int, int]] = []  # (position, file id), due files only, head order
        self.in_flight: dict[str, list[int]] = {}  # group -> [files, bytes]
        self.demand: TapeDemand | None = None  # cached; None when it must be rebuilt


class MemoryQueueStore:
    """A QueueStore over memory, with intake and completion for the replay."""

    def __init__(
        self,
        retry: RetryRule,
        *,
        track_usage: bool = False,
        usage_window_s: float = 86_400.0,
        buffer: BufferLimits | None = None,
        release_after_s: float = 0.0,
        usage_weights: Mapping[str, float] | None = None,
    ) -> None:
        self.retry = retry
        # per library, what its drive-second counts in reference drive-seconds (fair share across libraries)
        self.usage_weights = dict(usage_weights or {})
        # the disk buffer, accounting only (no bytes): None plans as the service with its buffer off
        self.buffer = MemoryBuffer(buffer, self._evicted) if buffer else None
        self.release_after_s = release_after_s
        self._holds: list[float | None] = []  # per row: how long its client holds the file once staged
        self._applied_at: datetime | None = None
        self.track_usage = track_usage
        self.usage_window_s = usage_window_s
        self.files: list[_File] = []
        self.rows: list[RowOutcome] = []
        self.mounts: list[MountRecord] = []
        self._by_path: dict[str, _File] = {}
        self._tapes: dict[TapeKey, _Tape] = {}
        # tapes with work by (oldest, library, tape); None when it must be rebuilt
        self._order: list[TapeKey] | None = []
        self._arrival: list[tuple[datetime, int]] = []  # due queued files by (queued_at, id), lazily pruned
        self._backoff: list[tuple[datetime, int]] = []  # queued files not yet due, by not_before
        self._open_mounts: dict[tuple[str, str, str | None], MountRecord] = {}  # (library, tape, drive)
        self._flying: dict[TapeKey, TapeInFlight] = {}  # tapes with files in flight
        # per library asked for (None: all of them), the views demand answers; emptied when they change
        self._flying_views: dict[str | None, tuple[TapeInFlight, ...]] = {}
        self._tapes_views: dict[str | None, tuple[TapeDemand, ...]] = {}
        self._in_flight = 0
        self._in_flight_by: dict[str, int] = {}  # per library
        self._libraries: set[str] = set()  # the libraries of every tape seen
        self._active = 0
        self._reading: dict[int, _File] = {}  # files whose read started and has not ended, by id

    # --- intake -------------------------------------------------------------------------------------------

    def add(
        self,
        *,
        path: str,
        tape: str,
        position: int,
        size: int,
        group: str,
        priority: int,
        at: datetime,
        hold_s: float | None = None,
        library: str = DEFAULT_LIBRARY,
    ) -> int:
        """A requester asks for a file at `at` and holds it `hold_s` once staged (None: the store's
        release_after_s); returns the row number its outcome is kept under."""
        row = len(self.rows)
        outcome = RowOutcome()
        self.rows.append(outcome)
        self._holds.append(hold_s)
        buffer = self.buffer
        if buffer is not None and not buffer.limits.fits_ever(size):
            # intake refuses a file the buffer can never hold
            outcome.state, outcome.start, outcome.end = FileState.FAILED, at, at
            return row
        file = self._by_path.get(path)
        if file is not None and file.state in FILE_ACTIVE:
            file.waiters.append(row)
            if priority > file.priority:
                file.priority = priority
                self._touch(file.key)
            return row
        if file is not None and file.state is FileState.STAGED and (buffer is None or buffer.holds(file.id)):
            # on disk already: answered at once, as intake does (and the file is pinned for this row too)
            outcome.state, outcome.start, outcome.end = FileState.STAGED, at, at
            if buffer is not None:
                buffer.touched(file.id, at, pin_end(at, self._hold(row)))
            return row
        file = _File(
            id=len(self.files) + 1,
            path=path,
            tape=tape,
            position=position,
            size=size,
            group=group,
            priority=priority,
            queued_at=at,
            waiters=[row],
            library=library,
        )
        self.files.append(file)
        self._by_path[path] = file
        self._active += 1
        self._enqueue(file)
        return row

    def _evicted(self, file_id: int) -> Evicted:
        file = self.files[file_id - 1]
        return Evicted(file.library, file.path)

    def _hold(self, row: int) -> float:
        hold = self._holds[row]
        return self.release_after_s if hold is None else hold

    def next_release(self) -> datetime | None:
        """When the buffer's next pin ends (None without a buffer or a pin)."""
        return self.buffer.next_release() if self.buffer is not None else None

    @property
    def active(self) -> int:
        """Recalls not yet final."""
        return self._active

    # --- QueueStore ---------------------------------------------------------------------------------------

    def demand(self, now: datetime, library: str | None = None) -> QueueDemand:
        """The whole queue's demand, or (`library`) one library's: its tapes and files in flight only; the
        usage is the site's whatever the library (fair share holds across the site)."""
        self._release_due(now)
        if self._order is None:
            self._order = sorted(
                (key for key, tape in self._tapes.items() if tape.queued),
                key=lambda key: (self._demand_of(self._tapes[key]).oldest, key),
            )
        tapes = self._tapes_views.get(library)
        if tapes is None:
            tapes = self._tapes_views[library] = tuple(
                self._demand_of(self._tapes[key]) for key in self._order if library in (None, key[0])
            )
        flying = self._flying_views.get(library)
        if flying is None:
            # in the order tapes took off: policies plan the same whatever the order (a property test)
            flying = self._flying_views[library] = tuple(
                tape for key, tape in self._flying.items() if library in (None, key[0])
            )
        return QueueDemand(
            tapes=tapes,
            in_flight=self._in_flight if library is None else self._in_flight_by.get(library, 0),
            in_flight_tapes=flying,
            usage=self._usage(now) if self.track_usage else (),
        )

    def claim(
        self,
        selections: Sequence[Selection],
        new_key: Callable[[], str],
        now: datetime,
        *,
        byte_budget: int | None = None,
        library: str | None = None,
    ) -> list[Claim]:
        """As the QueueStore's claim; with `library`, every selection (one of any tape too) stays in it."""
        self._release_due(now)
        claims: list[Claim] = []
        left = byte_budget
        for selection in selections:
            key = new_key()
            chosen = self._choose(selection, library) if selection.max_files > 0 else []
            if left is not None:
                chosen = chosen[: fitting(((f.id, f.size) for f in chosen), left)]
                left -= sum(f.size for f in chosen)
            for file in chosen:
                self._unqueue(file)
                file.state = CLAIM.target
                file.batch_key = key
                self._flight(file, +1)
            claims.append((selection, key, [_claimed(f) for f in chosen]))
        return claims

    def handed_over(
        self, accepted: Sequence[HandedOver], refused: Sequence[int], now: datetime
    ) -> tuple[int, int]:
        submitted = 0
        for batch in accepted:
            for file_id in batch.file_ids:
                file = self.files[file_id - 1]
                if file.state in HAND_OVER.sources:
                    file.state = HAND_OVER.target
                    file.batch_key = batch.batch_key
                    file.submitted_at = now
                    submitted += 1
        returned = 0
        for file_id in refused:
            file = self.files[file_id - 1]
            if file.state in GIVE_BACK.sources:
                self._flight(file, -1)
                file.state = GIVE_BACK.target
                file.batch_key = None
                self._enqueue(file)
                returned += 1
        return submitted, returned

    # --- completion ---------------------------------------------------------------------------------------

    def apply(
        self, events: Iterable[Event], now: datetime | None = None, library: str = DEFAULT_LIBRARY
    ) -> None:
        """`library`'s events, applied at `now` (None: each at its own time). As the service's completion,
        a staged file lands in the buffer, and is pinned, when its event is applied."""
        self._applied_at = now
        for event in events:
            kind = event.kind
            if kind is EventKind.MOUNTED:
                record = MountRecord(
                    len(self.mounts) + 1, event.tape or "", event.drive, event.at, library=library
                )
                self.mounts.append(record)
                self._open_mounts[(library, record.tape, record.drive)] = record
            elif kind is EventKind.UNMOUNTED:
                closing = self._open_mounts.pop((library, event.tape or "", event.drive), None)
                if closing is not None:
                    closing.unmounted = event.at
            else:
                self._apply_file_event(event)

    def _apply_file_event(self, event: Event) -> None:
        if event.file_key is None or not event.file_key.isdigit():
            return
        file = self.files[int(event.file_key) - 1]
        if event.kind is EventKind.FILE_STARTED:
            if self._current(file, event):
                self._started(file, event)
            return
        completion = read_ended(file, read_end(event), self.retry)
        if completion.move is None:
            return
        if completion.counted is Counted.STAGED:
            mount = self._open_mounts.get((file.library, event.tape or "", event.drive))
            if mount is not None:
                mount.files += 1
                mount.bytes += event.bytes
        if completion.move.target is FileState.QUEUED:
            self._requeue(file, completion.attempts, completion.not_before)
        else:
            file.attempts = completion.attempts
            self._finish(file, completion.move.target, event.at)

    @staticmethod
    def _current(file: _File, event: Event) -> bool:
        """The event is about the file's present attempt (not one it has moved on from)."""
        return holds_attempt(file, event.batch_key)

    def _started(self, file: _File, event: Event) -> None:
        file.started_at = event.at
        self._reading[file.id] = file
        file.drive = event.drive
        mount = self._open_mounts.get((file.library, event.tape or "", event.drive))
        if mount is None:
            return
        file.mount = mount.number
        mount.started_by_group[file.group] = mount.started_by_group.get(file.group, 0) + 1
        if file.submitted_at is not None and (mount.requested is None or file.submitted_at < mount.requested):
            mount.requested = file.submitted_at

    def _finish(self, file: _File, state: FileState, at: datetime) -> None:
        self._flight(file, -1)
        self._reading.pop(file.id, None)
        file.state = state
        file.ended_at = at
        self._active -= 1
        if self.buffer is not None and state is FileState.STAGED:
            landed = self._applied_at or at
            held = max((self._hold(row) for row in file.waiters), default=0.0)
            self.buffer.landed(file.id, file.size, landed, pin_end(landed, held))
        for row in file.waiters:
            outcome = self.rows[row]
            outcome.state, outcome.start, outcome.end = state, file.started_at, at
            outcome.mount, outcome.drive = file.mount, file.drive
        file.waiters = []

    def _requeue(self, file: _File, attempts: int, not_before: datetime | None) -> None:
        self._flight(file, -1)
        self._reading.pop(file.id, None)
        file.state = FileState.QUEUED
        file.attempts = attempts
        file.batch_key = None
        file.not_before = not_before
        file.started_at = file.mount = file.drive = None
        self._enqueue(file)

    # --- read timeouts (carousel.scheduler.read_timeouts) ---------------------------------------------------

    def reads_started_before(
        self, started_before: datetime, limit: int, library: str | None = None
    ) -> list[Reading]:
        """Reads started before `started_before` and not ended (in `library`, or any), oldest first, as the
        database answers."""
        started = sorted(
            (
                (file.started_at, file.id, file)
                for file in self._reading.values()
                if file.started_at is not None
                and file.started_at < started_before
                and file.batch_key
                and library in (None, file.library)
            ),
            key=lambda entry: entry[:2],
        )
        return [
            Reading(file.id, file.tape, file.size, file.batch_key or "", started_at)
            for started_at, _, file in started[:limit]
        ]

    def fail_attempts(self, events: list[Event]) -> int:
        """Applies the read timeouts' FILE_FAILED events; how many attempts they ended."""
        ended = sum(
            1
            for event in events
            if event.file_key and self._current(self.files[int(event.file_key) - 1], event)
        )
        self.apply(events)
        return ended

    # --- queue bookkeeping --------------------------------------------------------------------------------

    def next_due(self) -> datetime | None:
        """When the next backed-off file becomes due."""
        return self._backoff[0][0] if self._backoff else None

    def _tape(self, key: TapeKey) -> _Tape:
        tape = self._tapes.get(key)
        if tape is None:
            tape = self._tapes[key] = _Tape(*key)
            self._libraries.add(key[0])
        return tape

    def _touch(self, key: TapeKey) -> None:
        self._tape(key).demand = None
        self._order = None
        self._tapes_views.clear()

    def _enqueue(self, file: _File) -> None:
        if file.not_before is not None:
            heapq.heappush(self._backoff, (file.not_before, file.id))
            return
        bisect.insort(self._tape(file.key).queued, (file.position, file.id))
        # the arrival list is pruned lazily: a file queued again may still have its entry there
        arrival, entry = self._arrival, (file.queued_at, file.id)
        where = bisect.bisect_left(arrival, entry)
        if where == len(arrival) or arrival[where] != entry:
            arrival.insert(where, entry)
        self._touch(file.key)

    def _unqueue(self, file: _File) -> None:
        queued = self._tapes[file.key].queued
        del queued[bisect.bisect_left(queued, (file.position, file.id))]
        self._touch(file.key)  # the arrival list is pruned lazily

    def _release_due(self, now: datetime) -> None:
        backoff = self._backoff
        while backoff and backoff[0][0] <= now:
            _, file_id = heapq.heappop(backoff)
            file = self.files[file_id - 1]
            if file.state is FileState.QUEUED and file.not_before is not None:
                file.not_before = None
                self._enqueue(file)

    def _flight(self, file: _File, step: int) -> None:
        tape = self._tape(file.key)
        counts = tape.in_flight.setdefault(file.group, [0, 0])
        counts[0] += step
        counts[1] += step * file.size
        if counts[0] == 0:
            del tape.in_flight[file.group]
        self._in_flight += step
        self._in_flight_by[file.library] = self._in_flight_by.get(file.library, 0) + step
        if self.buffer is not None:
            self.buffer.reserved_bytes += step * file.size
        if tape.in_flight:
            self._flying[file.key] = TapeInFlight(
                tape.name,
                sum(files for files, _ in tape.in_flight.values()),
                tuple(GroupDemand(g, files, size) for g, (files, size) in sorted(tape.in_flight.items())),
            )
        else:
            self._flying.pop(file.key, None)
        self._flying_views.clear()
        tape.demand = None
        if tape.queued:
            self._tapes_views.clear()

    def _demand_of(self, tape: _Tape) -> TapeDemand:
        if tape.demand is None:
            tape.demand = self._build_demand(tape)
        return tape.demand

    def _build_demand(self, tape: _Tape) -> TapeDemand:
        files = [self.files[file_id - 1] for _, file_id in tape.queued]
        groups: dict[str, list[_File]] = {}
        for file in files:
            groups.setdefault(file.group, []).append(file)
        return TapeDemand(
            tape=tape.name,
            files=len(files),
            bytes=sum(f.size for f in files),
            oldest=min(f.queued_at for f in files),
            max_priority=max(f.priority for f in files),
            service_class=SERVICE_CLASS,
            groups=tuple(
                GroupDemand(
                    name,
                    len(members),
                    sum(f.size for f in members),
                    oldest=min(f.queued_at for f in members),
                    max_priority=max(f.priority for f in members),
                )
                for name, members in sorted(groups.items())
            ),
            in_flight=sum(files for files, _ in tape.in_flight.values()),
            retries=sum(1 for f in files if f.attempts > 0),
        )

    def _choose(self, selection: Selection, library: str | None) -> list[_File]:
        """The files a claim takes, in the selection's order, as the claim query picks them."""
        if selection.service_class not in (None, SERVICE_CLASS):
            return []
        wanted = selection.max_files
        out: list[_File] = []
        total = 0
        for file in self._candidates(selection, library):
            if selection.group is not None and file.group != selection.group:
                continue
            if selection.first_attempts_only and file.attempts > 0:
                continue
            total += file.size
            if selection.max_bytes is not None and out and total > selection.max_bytes:
                break
            out.append(file)
            if len(out) >= wanted:
                break
        return out

    def _candidates(self, selection: Selection, library: str | None) -> Iterable[_File]:
        files = self.files
        if selection.order is ReadOrder.POSITION:
            for key in self._keys(selection.tape, library):
                tape = self._tapes.get(key)
                if tape is not None:
                    # a copy: the caller removes what it takes
                    yield from [files[file_id - 1] for _, file_id in list(tape.queued)]
            return
        if selection.tape is not None:
            queued = [
                files[file_id - 1]
                for key in self._keys(selection.tape, library)
                for _, file_id in self._tapes[key].queued
            ]
            yield from sorted(queued, key=lambda f: (f.queued_at, f.id))
            return
        self._prune_arrivals()
        for queued_at, file_id in list(self._arrival):
            file = files[file_id - 1]
            if (
                file.state is FileState.QUEUED
                and file.not_before is None
                and file.queued_at == queued_at
                and library in (None, file.library)
            ):
                yield file

    def _keys(self, tape: str | None, library: str | None) -> list[TapeKey]:
        """The tapes a selection may take from, in (tape, library) order: `tape` in `library` (in any, when
        the library is not given), or every tape of it."""
        libraries = sorted(self._libraries) if library is None else [library]
        if tape is not None:  # one lookup per library, not a pass over every tape
            return [(name, tape) for name in libraries if (name, tape) in self._tapes]
        return sorted(
            (key for key in self._tapes if library in (None, key[0])), key=lambda key: (key[1], key[0])
        )

    def _prune_arrivals(self) -> None:
        arrival = self._arrival
        files = self.files
        stale = 0
        while stale < len(arrival):
            queued_at, file_id = arrival[stale]
            file = files[file_id - 1]
            if file.state is FileState.QUEUED and file.not_before is None and file.queued_at == queued_at:
                break
            stale += 1
        del arrival[:stale]

    # --- fair share accounting ----------------------------------------------------------------------------

    def _usage(self, now: datetime) -> tuple[GroupUsage, ...]:
        """As carousel.db.usage_queries reads it; a pass over the mounts, so only kept when asked for."""
        since = now - timedelta(seconds=self.usage_window_s)
        spans: list[tuple[float, dict[str, int]]] = []
        for mount in reversed(self.mounts):
            end = mount.unmounted or now
            if mount.unmounted is not None and mount.unmounted <= since:
                continue
            if mount.started_by_group:
                seconds = max(0.0, (min(end, now) - max(mount.mounted, since)).total_seconds())
                # reference drive-seconds: a slower library's drive-second counts less (decisions.md §17)
                spans.append((seconds * self.usage_weights.get(mount.library, 1.0), mount.started_by_group))
        return split_mount_time(spans)


def pin_end(at: datetime, hold_s: float) -> datetime:
    """A pin's end as the service keeps it: whole epoch seconds of `at`, plus the time held."""
    return datetime.fromtimestamp(epoch_s(at), UTC) + timedelta(seconds=hold_s)


def _claimed(file: _File) -> ClaimedFile:
    return ClaimedFile(
        id=file.id,
        path=file.path,
        tape=file.tape,
        position_bytes=file.position,
        size_bytes=file.size,
        service_class=SERVICE_CLASS,
        queued_at=file.queued_at,
    )
