"""CommandAdapter: a real HSM attached through external programs, as dCache's HSM scripts and XRootD's stage
commands attach theirs.

A lookup program answers where files are; a stage program recalls one batch (files of one tape, in carousel's
order) and reports each file as it goes; an optional cancel program asks the HSM to drop files of a running
batch; an optional health program says whether the library is up. The contract the programs follow is in
docs/command-adapter.md and protocol.py. Whatever a program does (hang, crash, print garbage, vanish), every
submitted file gets exactly one terminal event with the reason, and no exception reaches the caller.

Stage programs run on a small bounded pool of threads, one program per batch; `submit` only queues. Events go
to the sink when one is set, else wait for `poll_events`; one lock orders them, so `seq` order is delivery
order. The sink is called with that lock held: it should be quick (hand the event over) and must not call
`close`.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from threading import Condition, RLock
from typing import Literal, TypeVar

from carousel.domain.clock import Clock
from carousel.domain.errors import Conflict, InvalidInput, Unavailable
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
from hsm_adapters.command.config import (
    CancelSpec,
    CommandOptions,
    EvictSpec,
    HealthSpec,
    ProgramSpec,
    parse_options,
    render,
)
from hsm_adapters.command.protocol import (
    EXIT_NOT_ON_TAPE,
    EXIT_OK,
    EXIT_RETRY_LATER,
    PROTOCOL_ENV,
    PROTOCOL_VERSION,
    BadLine,
    CancelLine,
    HealthLine,
    LookupLine,
    LookupNotOnTapeLine,
    LookupOnTapeLine,
    StageFileLine,
    StageLine,
    StageTapeLine,
    excerpt,
    parse_cancel_line,
    parse_health_line,
    parse_lookup_line,
    parse_stage_line,
    request_lines,
)
from hsm_adapters.command.runner import MAX_LINE_BYTES, Limits, Line, Outcome, ProgramRun

log = logging.getLogger(__name__)

NAME = "command"
CLEAN_EXITS = frozenset({EXIT_OK, EXIT_NOT_ON_TAPE, EXIT_RETRY_LATER})
_HEALTH_ORDER = {Health.ONLINE: 0, Health.DEGRADED: 1, Health.OFFLINE: 2}
_CLOSING = "the command adapter is closing"

_Parsed = TypeVar("_Parsed")


def _parse(line: Line, parse: Callable[[int, str], _Parsed | BadLine]) -> _Parsed | BadLine:
    if line.too_long:
        return BadLine(line.number, f"longer than {MAX_LINE_BYTES} bytes", excerpt(line.text))
    return parse(line.number, line.text)


def _bad_note(bad: BadLine | None) -> str:
    return f"; {bad.describe()}" if bad is not None else ""


class _Complaints:
    """A program's protocol problems: the first few logged, the rest counted, so a flood stays a few lines."""

    LOGGED = 3

    def __init__(self, program: str) -> None:
        self._program = program
        self.count = 0
        self.first_bad_line: BadLine | None = None

    def bad_line(self, bad: BadLine) -> None:
        if self.first_bad_line is None:
            self.first_bad_line = bad
        self.odd(bad.describe())

    def odd(self, message: str) -> None:
        self.count += 1
        if self.count <= self.LOGGED:
            log.warning("command adapter: %s: %s", self._program, message)

    def done(self) -> None:
        if self.count > self.LOGGED:
            log.warning(
                "command adapter: %s: %d more problems not logged", self._program, self.count - self.LOGGED
            )


@dataclass(eq=False)
class _Recall:
    file: BatchFile
    started: bool = False
    finished: bool = False
    cancelled_by_carousel: bool = False  # the HSM agreed to drop it, or its program was stopped for it


@dataclass(eq=False)
class _BatchRun:
    batch: Batch
    recalls: dict[str, _Recall]
    phase: Literal["queued", "running"] = "queued"
    program: ProgramRun | None = None
    drive: str | None = None
    good_lines: int = 0
    complaints: _Complaints = field(default_factory=lambda: _Complaints("stage program"))

    def unfinished(self) -> list[_Recall]:
        return [recall for recall in self.recalls.values() if not recall.finished]


class CommandAdapter:
    name = NAME

    def __init__(
        self, options: CommandOptions, clock: Clock, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._options = options
        self._clock = clock
        self._monotonic = monotonic  # what programs' time limits are measured on (runner.ProgramRun)
        self._lock = RLock()
        self._changed = Condition(self._lock)
        self._executor = ThreadPoolExecutor(
            max_workers=options.max_workers, thread_name_prefix="carousel-stage"
        )
        self._batches: dict[str, _BatchRun] = {}  # queued or running, by batch key
        self._pending: dict[str, _BatchRun] = {}  # unfinished file key -> its batch
        self._done_batches: OrderedDict[str, None] = OrderedDict()
        self._done_files: OrderedDict[str, None] = OrderedDict()
        self._calls: set[ProgramRun] = set()  # lookup, cancel, health: run in callers' threads
        self._events: deque[Event] = deque()
        self._sink: EventSink | None = None
        self._seq = 0
        self._closed = False
        self._down_drives: set[str] = set()  # drives the drive program took down (capacity counts them out)
        self._failures = 0  # consecutive calls whose program did not run at all
        self._last_failure_at: datetime | None = None
        self._health_probe: tuple[datetime, Health] | None = None

    # --- lookup ---------------------------------------------------------------------------------------

    def lookup(self, paths: Sequence[str]) -> list[LookupResult]:
        paths = list(paths)
        answers: dict[str, LookupResult] = {}
        try:
            unique = list(dict.fromkeys(paths))
            step = self._options.lookup.max_paths_per_call
            for start in range(0, len(unique), step):
                answers.update(self._lookup_chunk(unique[start : start + step]))
        except Exception as exc:  # a bug here must still give every path an answer
            log.exception("command adapter: lookup failed")
            return [
                answers.get(path) or Unknown(path, f"command adapter internal error: {exc!r}")
                for path in paths
            ]
        return [answers[path] for path in paths]

    def _lookup_chunk(self, chunk: list[str]) -> dict[str, LookupResult]:
        wanted = set(chunk)
        answers: dict[str, LookupResult] = {}
        complaints = _Complaints("lookup program")
        good = 0

        def on_line(line: Line) -> None:
            nonlocal good
            parsed: LookupLine | BadLine = _parse(line, parse_lookup_line)
            if isinstance(parsed, BadLine):
                complaints.bad_line(parsed)
                return
            good += 1
            if parsed.path not in wanted or parsed.path in answers:
                complaints.odd(f"answered {parsed.path!r} again or unasked")
                return
            answers[parsed.path] = _lookup_result(parsed)

        spec = self._options.lookup
        outcome = self._call(spec, {}, [{"path": path} for path in chunk], on_line)
        complaints.done()
        with self._lock:
            self._record_call(outcome, answered=good > 0)
        reason = self._lookup_fallback(outcome, complaints.first_bad_line)
        for path in chunk:
            if path not in answers:
                if outcome.ran_to_an_end and outcome.returncode == EXIT_NOT_ON_TAPE:
                    answers[path] = NotOnTape(path, reason)
                else:
                    answers[path] = Unknown(path, reason)
        return answers

    @staticmethod
    def _lookup_fallback(outcome: Outcome, bad: BadLine | None) -> str:
        if outcome.start_error is not None:
            return f"lookup program could not start: {outcome.start_error}"
        if not outcome.ran_to_an_end:
            return f"lookup program {outcome.describe()}{_bad_note(bad)}"
        if outcome.returncode == EXIT_NOT_ON_TAPE:
            return f"not on tape (lookup program: {outcome.describe()})"
        if outcome.returncode == EXIT_RETRY_LATER:
            return f"the HSM asked to retry later (lookup program: {outcome.describe()})"
        if outcome.returncode == EXIT_OK:
            return f"lookup program did not report this path{_bad_note(bad)}"
        return f"lookup program failed: {outcome.describe()}{_bad_note(bad)}"

    # --- submission -----------------------------------------------------------------------------------

    def submit(self, batch: Batch) -> None:
        with self._lock:
            if self._closed:
                raise Unavailable("the command adapter is closed")
            if batch.key in self._batches or batch.key in self._done_batches:
                return  # idempotent by batch key
            keys = [file.key for file in batch.files]
            twice = [key for key, count in Counter(keys).items() if count > 1]
            if twice:
                raise InvalidInput(f"batch {batch.key!r} names file key {twice[0]!r} twice", field="files")
            busy = next((key for key in keys if key in self._pending), None)
            if busy is not None:
                other = self._pending[busy].batch.key
                raise Conflict(f"file key {busy!r} is already pending in batch {other!r}", field="files")
            complaints = _Complaints(f"stage program of batch {batch.key!r}")
            run = _BatchRun(batch, {file.key: _Recall(file) for file in batch.files}, complaints=complaints)
            if not run.recalls:
                self._remember(self._done_batches, batch.key)
                return
            self._batches[batch.key] = run
            for key in run.recalls:
                self._pending[key] = run
            self._executor.submit(self._run_batch, run)

    def _run_batch(self, run: _BatchRun) -> None:
        try:
            self._stage(run)
        except Exception as exc:  # a bug must not leave a file without its end
            log.exception("command adapter: batch %s failed inside the adapter", run.batch.key)
            with self._lock:
                for recall in run.unfinished():
                    self._finish(
                        run, recall, EventKind.FILE_FAILED, f"command adapter internal error: {exc!r}"
                    )
        finally:
            with self._lock:
                run.program = None
                self._batches.pop(run.batch.key, None)
                self._remember(self._done_batches, run.batch.key)
                self._changed.notify_all()

    def _stage(self, run: _BatchRun) -> None:
        batch = run.batch
        spec = self._options.stage
        with self._lock:
            todo = run.unfinished()
            if self._closed or not todo:
                return  # closed: close() already ended these files
            requests: list[dict[str, object]] = [
                {
                    "key": recall.file.key,
                    "path": recall.file.path,
                    "position_bytes": recall.file.position_bytes,
                    "size_bytes": recall.file.size_bytes,
                    "destination": recall.file.destination,  # null: recall without bytes
                }
                for recall in todo
            ]
            program = self._program(spec, _batch_values(batch), requests)
            run.program = program
            run.phase = "running"
        outcome = program.run(lambda line: self._on_stage_line(run, line))
        run.complaints.done()
        with self._lock:
            self._record_call(outcome, answered=run.good_lines > 0)
            for recall in run.unfinished():
                kind, reason, retryable = self._unreported(run, recall, outcome)
                self._finish(run, recall, kind, reason, retryable=retryable)

    def _on_stage_line(self, run: _BatchRun, line: Line) -> None:
        parsed: StageLine | BadLine = _parse(line, parse_stage_line)
        with self._lock:
            if isinstance(parsed, BadLine):
                run.complaints.bad_line(parsed)
                return
            run.good_lines += 1
            if isinstance(parsed, StageTapeLine):
                if parsed.event == "MOUNTED" and parsed.drive:
                    run.drive = parsed.drive
                self._emit(
                    EventKind(parsed.event),
                    run=run,
                    tape=parsed.tape or run.batch.tape,
                    drive=parsed.drive or run.drive,
                    reason=parsed.reason,
                )
                return
            self._apply_file_line(run, parsed)

    def _apply_file_line(self, run: _BatchRun, parsed: StageFileLine) -> None:
        recall = run.recalls.get(parsed.key)
        if recall is None or recall.finished:
            which = "which is not in the batch" if recall is None else "which had already ended"
            run.complaints.odd(f"reported {parsed.status} for key {parsed.key!r}, {which}")
            return
        if parsed.status == "STARTED":
            if not recall.started:
                recall.started = True
                self._emit(EventKind.FILE_STARTED, run=run, recall=recall)
        elif parsed.status == "STAGED":
            size = parsed.bytes if parsed.bytes is not None else recall.file.size_bytes
            checksum = parsed.checksum.lower() if parsed.checksum is not None else None
            self._finish(run, recall, EventKind.FILE_STAGED, None, size=size, checksum=checksum)
        elif parsed.status == "FAILED":
            reason = parsed.reason or "the HSM reported a failure without a reason"
            self._finish(run, recall, EventKind.FILE_FAILED, reason, retryable=parsed.retryable)
        else:
            self._finish(run, recall, EventKind.FILE_CANCELLED, parsed.reason or "cancelled by the HSM")

    @staticmethod
    def _unreported(run: _BatchRun, recall: _Recall, outcome: Outcome) -> tuple[EventKind, str, bool]:
        """The end of a file its program never reported, from how the program ended."""
        note = _bad_note(run.complaints.first_bad_line)
        if recall.cancelled_by_carousel:
            return EventKind.FILE_CANCELLED, "cancelled by carousel; the HSM did not read it", True
        if outcome.start_error is not None:
            return EventKind.FILE_FAILED, f"stage program could not start: {outcome.start_error}", True
        if not outcome.ran_to_an_end:
            return EventKind.FILE_FAILED, f"stage program {outcome.describe()}{note}", True
        if outcome.returncode == EXIT_NOT_ON_TAPE:
            return (
                EventKind.FILE_FAILED,
                f"not on tape {run.batch.tape} (stage program: {outcome.describe()})",
                False,
            )
        if outcome.returncode == EXIT_RETRY_LATER:
            return (
                EventKind.FILE_FAILED,
                f"the HSM asked to retry later (stage program: {outcome.describe()})",
                True,
            )
        if outcome.returncode == EXIT_OK:
            return EventKind.FILE_FAILED, f"program exited without reporting this file{note}", True
        return EventKind.FILE_FAILED, f"stage program failed: {outcome.describe()}{note}", True

    # --- evict ----------------------------------------------------------------------------------------

    def evict(self, paths: Sequence[str]) -> None:
        """Run the evict program with the paths (JSON lines {"path": ...}), if one is configured: the HSM may
        drop disk copies of its own. Without one there is nothing to do. Never raises: a failure is logged."""
        spec = self._options.evict
        unique = list(dict.fromkeys(paths))
        if spec is None or not unique:
            return
        try:
            for start in range(0, len(unique), spec.max_paths_per_call):
                self._evict_chunk(spec, unique[start : start + spec.max_paths_per_call])
        except Exception:
            log.exception("command adapter: evict failed")

    def _evict_chunk(self, spec: EvictSpec, chunk: list[str]) -> None:
        outcome = self._call(spec, {}, [{"path": path} for path in chunk], lambda line: None)
        if not (outcome.ran_to_an_end and outcome.returncode == EXIT_OK):
            log.warning("command adapter: evict program of %d paths: %s", len(chunk), outcome.describe())

    # --- drives (ControlsDrives) -----------------------------------------------------------------------

    def drive_names(self) -> tuple[str, ...]:
        """The configured drives, when a drive program can act on them; none otherwise."""
        return self._options.drives if self._options.drive is not None else ()

    def set_drive(self, drive: str, command: DriveCommand) -> None:
        """Run the drive program with `{drive}` and `{command}` (up, down_after_mount, down_now). Exit 0:
        done. Anything else raises, and the scheduler hands the change over again at its next cycle."""
        spec = self._options.drive
        if spec is None or drive not in self._options.drives:
            raise KeyError(drive)
        outcome = self._call(spec, {"drive": drive, "command": command.value}, [], lambda line: None)
        if not (outcome.ran_to_an_end and outcome.returncode == EXIT_OK):
            raise Unavailable(f"drive program for {drive} ({command.value}): {outcome.describe()}")
        with self._lock:
            if command is DriveCommand.UP:
                self._down_drives.discard(drive)
            else:
                self._down_drives.add(drive)

    # --- cancel ---------------------------------------------------------------------------------------

    def cancel(self, file_keys: Sequence[str]) -> CancelResult:
        cancelled: list[str] = []
        in_progress: list[str] = []
        unknown: list[str] = []
        running: dict[str, tuple[_BatchRun, list[str]]] = {}
        with self._lock:
            for key in dict.fromkeys(file_keys):
                run = self._pending.get(key)
                if run is None:
                    (in_progress if key in self._done_files else unknown).append(key)
                elif run.phase == "queued":
                    recall = run.recalls[key]
                    recall.cancelled_by_carousel = True
                    self._finish(run, recall, EventKind.FILE_CANCELLED, "cancelled before its batch started")
                    cancelled.append(key)
                else:
                    running.setdefault(run.batch.key, (run, []))[1].append(key)
        for run, keys in running.values():
            stopped, going_on = self._cancel_running(run, keys)
            cancelled += stopped
            in_progress += going_on
        return CancelResult(tuple(cancelled), tuple(in_progress), tuple(unknown))

    def _cancel_running(self, run: _BatchRun, keys: list[str]) -> tuple[list[str], list[str]]:
        spec = self._options.cancel
        if spec is None:
            # No way to drop single files: when nothing the batch still has to do is wanted, stop its
            # program. The files may be mid-read, so they are reported in progress; their FILE_CANCELLED
            # (or an earlier STAGED) follows.
            with self._lock:
                left = {recall.file.key for recall in run.unfinished()}
                if left and left <= set(keys) and run.program is not None:
                    for key in left:
                        run.recalls[key].cancelled_by_carousel = True
                    run.program.stop("cancelled by carousel")
            return [], keys
        confirmed = self._ask_cancel_program(run, keys, spec)
        cancelled: list[str] = []
        in_progress: list[str] = []
        with self._lock:
            for key in keys:
                recall = run.recalls[key]
                if key in confirmed and not recall.finished:
                    recall.cancelled_by_carousel = True
                    cancelled.append(key)
                else:
                    in_progress.append(key)
        return cancelled, in_progress

    def _ask_cancel_program(self, run: _BatchRun, keys: list[str], spec: CancelSpec) -> set[str]:
        asked = set(keys)
        confirmed: set[str] = set()
        complaints = _Complaints(f"cancel program of batch {run.batch.key!r}")
        good = 0

        def on_line(line: Line) -> None:
            nonlocal good
            parsed: CancelLine | BadLine = _parse(line, parse_cancel_line)
            if isinstance(parsed, BadLine):
                complaints.bad_line(parsed)
                return
            good += 1
            if parsed.status == "CANCELLED" and parsed.key in asked:
                confirmed.add(parsed.key)

        requests: list[dict[str, object]] = [{"key": key, "path": run.recalls[key].file.path} for key in keys]
        outcome = self._call(spec, _batch_values(run.batch), requests, on_line)
        complaints.done()
        with self._lock:
            self._record_call(outcome, answered=good > 0)
        if not (outcome.ran_to_an_end and outcome.returncode == EXIT_OK):
            complaints.odd(f"ended badly: {outcome.describe()}")
        return confirmed  # what it printed stands, however it ended

    # --- events ---------------------------------------------------------------------------------------

    def poll_events(self, limit: int | None = None) -> list[Event]:
        with self._lock:
            count = len(self._events) if limit is None else max(0, min(limit, len(self._events)))
            return [self._events.popleft() for _ in range(count)]

    def set_sink(self, sink: EventSink | None) -> None:
        with self._lock:
            self._sink = sink
            while sink is not None and self._events:
                try:
                    sink(self._events[0])
                except Exception:
                    log.exception("command adapter: event sink failed; events stay for poll_events")
                    return
                self._events.popleft()

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no batch is queued or running (every submitted file has its end), or the timeout.

        Not part of the protocol: for draining before shutdown, and for tests that wait on real programs.
        """
        with self._changed:
            return self._changed.wait_for(lambda: not self._batches, timeout=timeout_s)

    def _emit(
        self,
        kind: EventKind,
        *,
        run: _BatchRun,
        recall: _Recall | None = None,
        tape: str | None = None,
        drive: str | None = None,
        reason: str | None = None,
        retryable: bool = True,
        size: int = 0,
        checksum: str | None = None,
    ) -> None:
        """Number and deliver one event; the caller holds the lock, which keeps seq order = delivery order."""
        self._seq += 1
        event = Event(
            kind=kind,
            at=self._clock.now(),
            seq=self._seq,
            tape=tape or run.batch.tape,
            drive=drive or run.drive,
            file_key=recall.file.key if recall else None,
            path=recall.file.path if recall else None,
            batch_key=run.batch.key,
            bytes=size,
            reason=reason,
            retryable=retryable,
            checksum=checksum,
        )
        if self._sink is not None and not self._events:
            try:
                self._sink(event)
                return
            except Exception:
                log.exception(
                    "command adapter: event sink failed on seq %d; it stays for poll_events", event.seq
                )
        self._events.append(event)

    def _finish(
        self,
        run: _BatchRun,
        recall: _Recall,
        kind: EventKind,
        reason: str | None,
        *,
        retryable: bool = True,
        size: int = 0,
        checksum: str | None = None,
    ) -> None:
        """The one terminal event of a file; the caller holds the lock."""
        if recall.finished:
            return
        recall.finished = True
        self._pending.pop(recall.file.key, None)
        self._remember(self._done_files, recall.file.key)
        self._emit(
            kind, run=run, recall=recall, reason=reason, retryable=retryable, size=size, checksum=checksum
        )

    # --- capacity and health --------------------------------------------------------------------------

    def capacity(self) -> Capacity:
        options = self._options
        with self._lock:
            if self._closed:
                return Capacity(0, 0, {service_class: 0 for service_class in options.service_classes})
            running = [run for run in self._batches.values() if run.phase == "running"]
            slots = max(0, options.queue_files - len(self._pending))
            # each drive carousel took down leaves one stage program fewer (a worker stands for a drive)
            total = max(0, options.max_workers - len(self._down_drives))
            return Capacity(
                drives_total=total,
                drives_free=max(0, total - len(running)),
                queue_slots={service_class: slots for service_class in options.service_classes},
                mounted_tapes=tuple(sorted({run.batch.tape for run in running})),
            )

    def health(self) -> Health:
        with self._lock:
            if self._closed:
                return Health.OFFLINE
            streak = self._streak_health()
        spec = self._options.health
        if spec is None:
            return streak
        probe = self._probe_health(spec)
        return max(streak, probe, key=_HEALTH_ORDER.__getitem__)

    def _streak_health(self) -> Health:
        options = self._options
        if self._failures >= options.offline_after_failures:
            since = self._last_failure_at
            if since is not None and (self._clock.now() - since).total_seconds() < options.offline_hold_s:
                return Health.OFFLINE
            return Health.DEGRADED  # held long enough: let the scheduler try again
        if self._failures >= options.degraded_after_failures:
            return Health.DEGRADED
        return Health.ONLINE

    def _probe_health(self, spec: HealthSpec) -> Health:
        with self._lock:
            probe = self._health_probe
            if probe is not None and (self._clock.now() - probe[0]).total_seconds() < spec.cache_s:
                return probe[1]
        answers: list[HealthLine] = []
        complaints = _Complaints("health program")

        def on_line(line: Line) -> None:
            parsed: HealthLine | BadLine = _parse(line, parse_health_line)
            if isinstance(parsed, BadLine):
                complaints.bad_line(parsed)
            elif not answers:
                answers.append(parsed)

        outcome = self._call(spec, {}, [], on_line)
        complaints.done()
        clean = outcome.ran_to_an_end and outcome.returncode == EXIT_OK
        if clean and answers:
            health = Health(answers[0].health)
            if answers[0].reason:
                log.info("command adapter: health program says %s: %s", health, answers[0].reason)
        elif outcome.ran_to_an_end and outcome.returncode == EXIT_RETRY_LATER:
            health = Health.DEGRADED
        else:
            health = Health.OFFLINE
            log.warning("command adapter: health program gave no answer: %s", outcome.describe())
        with self._lock:
            self._health_probe = (self._clock.now(), health)
        return health

    def _record_call(self, outcome: Outcome, *, answered: bool) -> None:
        """Count calls whose program did not run at all: could not start, or hung or died saying nothing."""
        if outcome.stopped is not None:
            return  # carousel ended it: says nothing about the HSM
        ran = answered or (outcome.ran_to_an_end and outcome.returncode in CLEAN_EXITS)
        if ran:
            self._failures = 0
        else:
            self._failures += 1
            self._last_failure_at = self._clock.now()

    # --- programs and lifetime ------------------------------------------------------------------------

    def _program(
        self, spec: ProgramSpec, values: Mapping[str, str], requests: list[dict[str, object]]
    ) -> ProgramRun:
        limits = Limits(
            timeout_s=spec.timeout_s,
            idle_timeout_s=getattr(spec, "idle_timeout_s", None),
            kill_grace_s=self._options.kill_grace_s,
        )
        env = {**os.environ, PROTOCOL_ENV: PROTOCOL_VERSION}
        return ProgramRun(
            render(spec.argv, values), request_lines(requests), limits, env=env, monotonic=self._monotonic
        )

    def _call(
        self,
        spec: ProgramSpec,
        values: Mapping[str, str],
        requests: list[dict[str, object]],
        on_line: Callable[[Line], None],
    ) -> Outcome:
        """Run a synchronous program (lookup, cancel, health) in the caller's thread; close() can stop it."""
        program = self._program(spec, values, requests)
        with self._lock:
            if self._closed:
                return Outcome(stopped=_CLOSING)
            self._calls.add(program)
        try:
            return program.run(on_line)
        finally:
            with self._lock:
                self._calls.discard(program)

    def _remember(self, keys: OrderedDict[str, None], key: str) -> None:
        keys[key] = None
        keys.move_to_end(key)
        while len(keys) > self._options.remember_keys:
            keys.popitem(last=False)

    def close(self) -> None:
        """Stop every program, end every file not yet ended (FILE_FAILED, retryable), wait for the workers."""
        with self._lock:
            if not self._closed:
                self._closed = True
                for run in list(self._batches.values()):
                    if run.phase == "queued":
                        for recall in run.unfinished():
                            reason = "the command adapter closed before the batch ran"
                            self._finish(run, recall, EventKind.FILE_FAILED, reason)
                    elif run.program is not None:
                        run.program.stop(_CLOSING)
                for program in self._calls:
                    program.stop(_CLOSING)
        self._executor.shutdown(wait=True)


def _batch_values(batch: Batch) -> dict[str, str]:
    return {"batch": batch.key, "tape": batch.tape, "service_class": batch.service_class}


def _lookup_result(line: LookupLine) -> LookupResult:
    if isinstance(line, LookupOnTapeLine):
        checksum = line.checksum.lower() if line.checksum is not None else None
        return OnTape(line.path, line.tape, line.position_bytes, line.size_bytes, line.on_disk, checksum)
    if isinstance(line, LookupNotOnTapeLine):
        return NotOnTape(line.path, line.reason, line.on_disk)
    return Unknown(line.path, line.reason)


def build_command_adapter(
    options: Mapping[str, object], clock: Clock, *, monotonic: Callable[[], float] = time.monotonic
) -> CommandAdapter:
    """The adapter from its options table (see docs/command-adapter.md); ConfigError names a bad key.

    `clock` stamps events and times health; programs' limits are real seconds on `monotonic`.
    """
    return CommandAdapter(parse_options(options), clock, monotonic=monotonic)
