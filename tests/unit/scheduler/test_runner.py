"""The runner on APScheduler's real background thread: waits are bounded by timeouts, never sleeps."""

import logging
import threading

import pytest

from carousel.scheduler.runner import CycleRunner, SideJob

WAIT_S = 60  # bounded, and generous: each wait ends as soon as its event happens
# What APScheduler logs when a run of a job comes due while its last still runs (max_instances=1).
SKIPPED_RUN = "maximum number of running instances reached"


class LogEvent(logging.Handler):
    """Sets `happened` when a record on `logger` contains `text`: a log line to wait for."""

    def __init__(self, logger: str, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.logger, self.text = logging.getLogger(logger), text
        self.happened = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.happened.set()

    def __enter__(self) -> "LogEvent":
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)


def test_first_cycle_runs_at_once_then_on_the_interval():
    calls: list[int] = []
    second = threading.Event()

    def cycle() -> None:
        calls.append(1)
        if len(calls) >= 2:
            second.set()

    runner = CycleRunner(cycle, interval_s=0.05)
    runner.start()
    try:
        assert runner.running
        assert second.wait(WAIT_S)
    finally:
        runner.stop()
    assert not runner.running


def test_a_failing_cycle_does_not_stop_the_runner():
    outcomes: list[str] = []
    recovered = threading.Event()

    def cycle() -> None:
        if not outcomes:
            outcomes.append("raised")
            raise RuntimeError("database went away")
        outcomes.append("ran")
        recovered.set()

    runner = CycleRunner(cycle, interval_s=0.05)
    runner.start()
    try:
        assert recovered.wait(WAIT_S)
    finally:
        runner.stop()
    assert outcomes[:2] == ["raised", "ran"]


class SteppedClock:
    """A monotonic clock that moves only when told: a cycle outlasts its interval without waiting for it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_cycle_that_outlasts_the_interval_is_followed_at_once_never_overlapped_and_said_once():
    clock = SteppedClock()
    active = 0
    most = 0
    runs = 0
    lock = threading.Lock()
    three_done = threading.Event()

    def slow_cycle() -> None:
        nonlocal active, most, runs
        with lock:
            active += 1
            most = max(most, active)
        clock.now += 10.0  # each cycle lasts ten intervals: ten starts come due while it runs
        with lock:
            active -= 1
            runs += 1
            if runs >= 3:
                three_done.set()

    runner = CycleRunner(slow_cycle, interval_s=1.0, monotonic=clock)
    with LogEvent("apscheduler", SKIPPED_RUN) as skipped:
        runner.start()
        try:
            assert three_done.wait(WAIT_S)  # the next cycle at once: the clock never reached a start
        finally:
            runner.stop()
    assert most == 1
    assert runs >= 3
    assert runs == runner.overruns  # one line each, not one per missed start
    assert not skipped.happened.is_set()


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval_s"):
        CycleRunner(lambda: None, interval_s=0)


def test_a_side_job_runs_while_a_cycle_is_stuck_and_survives_its_own_failure():
    """The webhook deliverer's place: its own job, in its own thread, so neither waits for the other."""
    cycle_started = threading.Event()
    release_cycle = threading.Event()
    cycle_ended = threading.Event()
    side_runs: list[str] = []
    side_ran_twice = threading.Event()
    closed = threading.Event()

    def stuck_cycle() -> None:
        cycle_started.set()
        release_cycle.wait(WAIT_S)
        cycle_ended.set()

    def side() -> None:
        side_runs.append("ran")
        if len(side_runs) == 1:
            raise RuntimeError("a receiver misbehaved")
        side_ran_twice.set()

    job = SideJob("side", side, interval_s=0.01, close=closed.set)
    runner = CycleRunner(stuck_cycle, interval_s=60, side_jobs=[job])
    runner.start()
    try:
        assert cycle_started.wait(WAIT_S)
        assert side_ran_twice.wait(WAIT_S)
        assert not cycle_ended.is_set(), "the side job ran twice while the one cycle was still stuck"
    finally:
        release_cycle.set()
        runner.stop()
    assert closed.is_set()


def test_side_job_interval_must_be_positive():
    with pytest.raises(ValueError, match="side: interval_s"):
        CycleRunner(lambda: None, interval_s=1, side_jobs=[SideJob("side", lambda: None, interval_s=0)])


def test_a_side_job_may_run_at_start_rather_than_one_interval_later():
    ran = {"at start": threading.Event(), "later": threading.Event()}
    jobs = [
        SideJob("at-start", ran["at start"].set, interval_s=3600, run_at_start=True),
        SideJob("later", ran["later"].set, interval_s=3600),
    ]
    runner = CycleRunner(lambda: None, interval_s=60, side_jobs=jobs)
    runner.start()
    try:
        assert ran["at start"].wait(WAIT_S)
        assert not ran["later"].is_set()  # its first run is an hour away
    finally:
        runner.stop()


def test_a_looping_side_job_runs_again_after_each_run_ends_and_stops_with_the_runner():
    runs: list[int] = []
    overlapping: list[bool] = []
    running = threading.Event()
    third = threading.Event()

    def slow() -> None:
        overlapping.append(running.is_set())
        running.set()
        try:
            runs.append(len(runs))
            if len(runs) == 1:
                raise RuntimeError("the first run fails: the loop goes on")
            if len(runs) >= 3:
                third.set()
        finally:
            running.clear()

    runner = CycleRunner(lambda: None, interval_s=60, side_jobs=[SideJob("loop", slow, 0.001, loop=True)])
    runner.start()
    try:
        assert third.wait(WAIT_S)
    finally:
        runner.stop()
    stopped_at = len(runs)
    assert not any(overlapping)  # never two runs at once
    assert stopped_at >= 3
    assert len(runs) == stopped_at  # nothing runs after stop()
