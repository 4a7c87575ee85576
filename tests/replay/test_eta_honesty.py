"""The ETAs given at submission against the replay's completions (docs/benchmarks.md, "ETA honesty"):
under a trickle the error stays under the issue's 25 %; under a burst it comes from the requests that
arrive after an ETA was given, which the projection does not see."""

from __future__ import annotations

import dataclasses
import statistics

from carousel.replay.driver import ReplayConfig
from carousel.replay.eta_honesty import EtaHonesty, measure
from carousel.replay.trace import Trace, make_trace
from carousel.replay.workloads import workload


def honesty(name: str, scale: float, *, all_at_once: bool = False) -> EtaHonesty:
    chosen = workload(name)
    trace: Trace = chosen.generate(scale)
    if all_at_once:
        trace = make_trace([dataclasses.replace(row, arrival_s=0.0) for row in trace.rows])
    return measure(trace, ReplayConfig(profile=chosen.profile, drives=chosen.drives, policy="carousel"))


def test_every_request_gets_an_eta_at_submission_and_each_is_measured() -> None:
    measured = honesty("light_load", 0.3)

    assert len(measured.requests) == 300 and measured.without_eta == 0
    assert len(measured.errors) == 300 and measured.projections >= 290  # about one pass per arrival
    for request in measured.requests:
        assert request.done_s is not None and request.done_s > request.arrival_s
        assert request.eta_s is not None and request.eta_s > request.arrival_s


def test_under_a_trickle_the_median_error_is_under_a_quarter() -> None:
    measured = honesty("light_load", 0.3)

    # measured 19.0 % (p90 68 %)
    assert measured.median < 0.25


def test_under_a_burst_the_error_comes_from_later_arrivals() -> None:
    burst = honesty("star_batch", 0.02)
    at_once = honesty("star_batch", 0.02, all_at_once=True)

    # measured: 34.5 % over the burst; 19.8 % when every request arrives at once
    assert burst.median < 0.45
    assert at_once.median < 0.25
    given = sorted((r for r in burst.requests if r.error is not None), key=lambda r: r.arrival_s)
    tenth = len(given) // 10
    first = statistics.median(r.error for r in given[:tenth] if r.error is not None)
    last = statistics.median(r.error for r in given[-tenth:] if r.error is not None)
    # the first arrivals see the most of the burst after their ETA (measured 0.59 against 0.19), and
    # mostly finish later than promised
    assert last < 0.3 < first
    assert burst.late > 0.5
