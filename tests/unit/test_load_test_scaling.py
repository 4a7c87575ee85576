"""The load test's comparison of two worker counts: calls a second, calls per core of the API processes, and
what the machine's cores can answer at the measured cost of a call."""

from __future__ import annotations

from bench.load_test import Tally, scaling_lines


def _tally(calls: int, elapsed_s: float, cores: dict[str, float]) -> Tally:
    tally = Tally(elapsed_s=elapsed_s, cores=cores)
    tally.latencies["status"] = [0.01] * calls
    return tally


def test_workers_bound_by_the_machine_are_told_apart_from_workers_that_do_not_scale() -> None:
    one = _tally(2600, 10.0, {"api": 1.0, "scheduler": 0.1, "postgresql": 0.3, "generator": 0.1})
    two = _tally(3200, 10.0, {"api": 1.25, "scheduler": 0.1, "postgresql": 0.4, "generator": 0.15})
    lines = scaling_lines("api --workers 1", one, "api --workers 2", two, machine_cores=2)
    assert lines == [
        "calls/s under load, api --workers 2 / api --workers 1: 1.23",
        # 320 calls a second over 1.25 cores: 256 a core, against 260 with one worker
        "calls/s per core of the API processes, api --workers 2 / api --workers 1: 0.98 (256 / 260)",
        # 1.9 cores for 320 calls a second: 5.9 ms a call; two cores answer 2 / 0.0059375 = 337 a second
        "CPU a call across the measured processes, api --workers 2: 5.9 ms; at that cost this machine's"
        " 2 cores answer at most 337 calls/s (1.30 x api --workers 1)",
    ]


def test_without_the_api_apart_only_calls_a_second_are_compared() -> None:
    one = _tally(1000, 10.0, {"service": 1.0})
    two = _tally(1500, 10.0, {"service": 1.5})
    assert scaling_lines("serve", one, "serve again", two, machine_cores=2) == [
        "calls/s under load, serve again / serve: 1.50"
    ]
