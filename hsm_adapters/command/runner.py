"""Runs one external program to its end, whatever the program does.

Feeds its standard input, hands over each complete output line as it arrives, keeps the tail of standard
error, and ends it when it overruns its time or is asked to stop. One thread does all of this with a
selector, so a program that never reads its input, floods its error stream or holds its pipes open cannot
block carousel. The program runs in a session of its own and is ended as a process group (TERM, then KILL
after a grace), so whatever it started goes with it. Deadlines are real elapsed time: they bound a real
process. They are read from an injected monotonic clock (time.monotonic), which a test may hold still until
the program has set itself up, so a limit never races a slow start.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

MAX_LINE_BYTES = 65_536
STDERR_KEEP_BYTES = 4_096
STDERR_REASON_CHARS = 500
_CHUNK = 65_536


@dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float  # the whole call
    idle_timeout_s: float | None = None  # longest silence on standard output
    kill_grace_s: float = 5.0  # between TERM and KILL


@dataclass(frozen=True, slots=True)
class Line:
    number: int  # 1-based, counting every line the program printed (blank ones too)
    text: str
    too_long: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    returncode: int | None = None  # negative: ended by that signal (the subprocess convention)
    start_error: str | None = None  # the program could not be started at all
    timed_out: str | None = None  # which limit ran out
    stopped: str | None = None  # why carousel stopped it
    stderr_tail: str = ""

    @property
    def ran_to_an_end(self) -> bool:
        """The program started and exited by itself (with whatever status)."""
        return (
            self.start_error is None
            and self.timed_out is None
            and self.stopped is None
            and self.returncode is not None
            and self.returncode >= 0
        )

    def describe(self) -> str:
        if self.start_error is not None:
            return self.start_error
        if self.stopped is not None:
            what = f"stopped ({self.stopped})"
        elif self.timed_out is not None:
            what = f"{self.timed_out}; program killed"
        elif self.returncode is not None and self.returncode < 0:
            what = f"killed by signal {_signal_name(-self.returncode)}"
        else:
            what = f"exit status {self.returncode}"
        return f"{what}; stderr: {self.stderr_tail}" if self.stderr_tail else what


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _seconds(value: float) -> str:
    return f"{value:g} s"


class _LineSplitter:
    """Bytes in, complete lines out; a line longer than the limit is cut and flagged, never buffered whole."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self._buffer = bytearray()
        self._number = 0
        self._skipping = False  # inside the rest of an over-long line

    def _line(self, raw: bytes, too_long: bool) -> Line | None:
        self._number += 1
        text = raw[: self._max].decode("utf-8", errors="replace").rstrip("\r")
        if not too_long and not text.strip():
            return None
        return Line(self._number, text, too_long)

    def feed(self, chunk: bytes) -> list[Line]:
        lines: list[Line] = []
        self._buffer += chunk
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self._max:
                    if not self._skipping:
                        line = self._line(bytes(self._buffer), too_long=True)
                        if line is not None:
                            lines.append(line)
                        self._skipping = True
                    self._buffer.clear()
                return lines
            raw = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._skipping:
                self._skipping = False
                continue
            line = self._line(raw, too_long=len(raw) > self._max)
            if line is not None:
                lines.append(line)

    def finish(self) -> list[Line]:
        """A last line without a newline still counts."""
        if self._skipping or not self._buffer:
            return []
        line = self._line(bytes(self._buffer), too_long=False)
        self._buffer.clear()
        return [] if line is None else [line]


class _StderrTail:
    def __init__(self) -> None:
        self._kept = bytearray()

    def add(self, chunk: bytes) -> None:
        self._kept += chunk
        if len(self._kept) > STDERR_KEEP_BYTES:
            del self._kept[: len(self._kept) - STDERR_KEEP_BYTES]

    def text(self) -> str:
        lines = self._kept.decode("utf-8", errors="replace").splitlines()
        joined = " | ".join(line.strip() for line in lines if line.strip())
        return joined if len(joined) <= STDERR_REASON_CHARS else "…" + joined[-STDERR_REASON_CHARS:]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(pid, sig)


def end_process_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """TERM the program's process group, KILL what is left after the grace, and reap the program."""
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    # Also after a clean exit of the leader: its children may still be in the group.
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


_STDIN, _STDOUT, _STDERR, _WAKE = "stdin", "stdout", "stderr", "wake"


class ProgramRun:
    """One invocation. `run` blocks in the calling thread; `stop` may be called from any other."""

    def __init__(
        self,
        argv: Sequence[str],
        stdin_data: bytes,
        limits: Limits,
        *,
        env: Mapping[str, str] | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._argv = list(argv)
        self._stdin_data = stdin_data
        self._limits = limits
        self._env = dict(env) if env is not None else None
        self._max_line_bytes = max_line_bytes
        self._monotonic = monotonic  # the limits' seconds
        self._lock = threading.Lock()
        self._stop_reason: str | None = None
        self._wake_write: int | None = None

    def stop(self, reason: str) -> None:
        """Ask the run to end now; before it starts, it will not start at all."""
        with self._lock:
            if self._stop_reason is None:
                self._stop_reason = reason
            if self._wake_write is not None:
                # A full pipe is fine: the run sees the flag anyway.
                with contextlib.suppress(OSError):
                    os.write(self._wake_write, b"!")

    def _stop_requested(self) -> str | None:
        with self._lock:
            return self._stop_reason

    def run(self, on_line: Callable[[Line], None]) -> Outcome:
        with self._lock:
            if self._stop_reason is not None:
                return Outcome(stopped=self._stop_reason)
            wake_read, self._wake_write = os.pipe()
        try:
            try:
                process = subprocess.Popen(
                    self._argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    env=self._env,
                )
            except OSError as exc:
                return Outcome(start_error=f"cannot run {self._argv[0]!r}: {exc.strerror or exc}")
            try:
                return self._supervise(process, wake_read, on_line)
            finally:
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()
                if process.poll() is None:
                    end_process_group(process, 0.0)
        finally:
            with self._lock:
                wake_write, self._wake_write = self._wake_write, None
            os.close(wake_read)
            if wake_write is not None:
                os.close(wake_write)

    def _supervise(
        self, process: subprocess.Popen[bytes], wake_read: int, on_line: Callable[[Line], None]
    ) -> Outcome:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        limits = self._limits
        splitter = _LineSplitter(self._max_line_bytes)
        tail = _StderrTail()
        started = self._monotonic()
        deadline = started + limits.timeout_s
        idle_deadline = started + limits.idle_timeout_s if limits.idle_timeout_s else math.inf
        timed_out: str | None = None
        stopped: str | None = None

        with selectors.DefaultSelector() as selector:
            for stream, tag in ((process.stdout, _STDOUT), (process.stderr, _STDERR)):
                os.set_blocking(stream.fileno(), False)
                selector.register(stream.fileno(), selectors.EVENT_READ, tag)
            selector.register(wake_read, selectors.EVENT_READ, _WAKE)
            pending = memoryview(self._stdin_data)
            if pending:
                os.set_blocking(process.stdin.fileno(), False)
                selector.register(process.stdin.fileno(), selectors.EVENT_WRITE, _STDIN)
            else:
                process.stdin.close()
            open_outputs = 2

            while True:
                if open_outputs == 0 and process.poll() is not None:
                    break
                stopped = self._stop_requested()
                now = self._monotonic()
                if stopped is not None:
                    break
                if now >= deadline:
                    timed_out = f"timed out after {_seconds(limits.timeout_s)}"
                    break
                if now >= idle_deadline:
                    timed_out = f"printed nothing for {_seconds(limits.idle_timeout_s or 0.0)}"
                    break
                if open_outputs == 0:
                    # Both outputs closed: wait for the exit (usually a moment away), in slices so a stop
                    # request or the deadline still ends a program that lives on.
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=min(0.05, deadline - now))
                    continue
                for key, _ in selector.select(min(deadline, idle_deadline) - now):
                    if key.data == _STDIN:
                        try:
                            written = os.write(key.fd, pending[:_CHUNK])
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            written = len(pending)  # it stopped reading: its choice
                        pending = pending[written:]
                        if not pending:
                            selector.unregister(key.fd)
                            process.stdin.close()
                    elif key.data == _WAKE:
                        os.read(wake_read, 64)
                    else:
                        try:
                            chunk = os.read(key.fd, _CHUNK)
                        except BlockingIOError:
                            continue
                        if not chunk:
                            selector.unregister(key.fd)
                            open_outputs -= 1
                            if key.data == _STDOUT:
                                for line in splitter.finish():
                                    on_line(line)
                        elif key.data == _STDOUT:
                            if limits.idle_timeout_s:
                                idle_deadline = self._monotonic() + limits.idle_timeout_s
                            for line in splitter.feed(chunk):
                                on_line(line)
                        else:
                            tail.add(chunk)

        if stopped is not None or timed_out is not None:
            end_process_group(process, limits.kill_grace_s)
        return Outcome(
            returncode=process.wait(),
            timed_out=timed_out,
            stopped=stopped,
            stderr_tail=tail.text(),
        )
