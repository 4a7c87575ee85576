"""How honest the outlook's ETAs are: the ETA each request is given at submission against when it is done,
on simulated workloads (carousel/replay/eta_honesty.py).

    .venv/bin/python -m bench.bench_eta_honesty [--workload star_batch:0.05,light_load:1]
        [--policies carousel,fifo]

Prints, per workload and policy, the requests measured, the median and 90th percentile of
|ETA - done| / (done - arrival), the share of requests done later than their ETA, and the error of the
median request by the tenth of the arrivals it came in (arrivals after a request's ETA was given are
what the projection cannot see).
"""

from __future__ import annotations

import argparse
import statistics
import time

from carousel.replay.driver import ReplayConfig
from carousel.replay.eta_honesty import measure
from carousel.replay.workloads import workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="star_batch:0.05,light_load:1")
    parser.add_argument("--policies", default="carousel,fifo")
    args = parser.parse_args()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for spec in (w.strip() for w in args.workload.split(",") if w.strip()):
        name, _, scale_text = spec.partition(":")
        scale = float(scale_text or 1.0)
        chosen = workload(name)
        trace = chosen.generate(scale)
        print(f"== {name} (scale {scale:g}): {len(trace.rows):,} rows, {chosen.drives} x {chosen.profile}")
        print(
            f"{'policy':>9} {'requests':>8} {'no eta':>6} {'median':>7} {'p90':>7} {'late':>5}"
            f" {'by arrival tenth (median error)':<60} {'run s':>6}"
        )
        for policy in policies:
            started = time.perf_counter()
            honesty = measure(
                trace, ReplayConfig(profile=chosen.profile, drives=chosen.drives, policy=policy)
            )
            took = time.perf_counter() - started
            given = sorted((r for r in honesty.requests if r.error is not None), key=lambda r: r.arrival_s)
            tenths = [given[n * len(given) // 10 : (n + 1) * len(given) // 10] for n in range(10)]
            by_tenth = " ".join(
                f"{statistics.median(e for r in part if (e := r.error) is not None):.2f}"
                for part in tenths
                if part
            )
            print(
                f"{policy:>9} {len(given):>8} {honesty.without_eta:>6} {honesty.median:>7.1%}"
                f" {honesty.quantile(0.9):>7.1%} {honesty.late:>5.0%} {by_tenth:<60} {took:>6.1f}"
            )


if __name__ == "__main__":
    main()
