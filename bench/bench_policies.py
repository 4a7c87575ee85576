"""The policies side by side on the repository's workloads, at full size: carousel's throughput against each
baseline's, measured in the same run, and its makespan against the physical bound.

    .venv/bin/python -m bench.bench_policies [--workload star_batch,light_load,lto_modern,zipf_batch]
        [--scale 1.0]
        [--policies fifo,star2006,cta,carousel]

Each workload runs on its own library (carousel/replay/workloads.py), each policy as its system ran
(carousel/replay/library_setup.py). Prints, per workload, the bound and the resource that binds, one line per
policy (makespan, bound, MB/s, mounts, files per mount, efficiency, latency p50/p95) and carousel's ratios;
also how long each replay took.
"""

from __future__ import annotations

import argparse
import time

from carousel.replay.driver import ReplayConfig, replay
from carousel.replay.outputs import summarise
from carousel.replay.workloads import workload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="star_batch,light_load,lto_modern,zipf_batch")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--policies", default="fifo,star2006,cta,carousel")
    args = parser.parse_args()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for name in (w.strip() for w in args.workload.split(",") if w.strip()):
        chosen = workload(name)
        trace = chosen.generate(args.scale)
        print(
            f"== {name} (scale {args.scale:g}): {len(trace.rows):,} rows, {chosen.drives} x {chosen.profile}"
        )
        print(
            f"{'policy':>9} {'makespan s':>11} {'bound s':>10} {'x bound':>8} {'MB/s':>8} {'mounts':>7}"
            f" {'files/mnt':>9} {'effic.':>7} {'p50 s':>9} {'p95 s':>9} {'replay s':>8}"
        )
        print_bound = True
        rates: dict[str, float] = {}
        medians: dict[str, float] = {}
        for policy in policies:
            started = time.perf_counter()
            result = replay(trace, ReplayConfig(profile=chosen.profile, drives=chosen.drives, policy=policy))
            s = summarise(result)
            took = time.perf_counter() - started
            if print_bound:
                detail = s["bound_detail"]
                print(
                    f"bound {s['physical_bound_s']:,.0f} s, binding: {detail['binding']} (drives"
                    f" {detail['drives_s']:,.0f} s, robots {detail['robots_s']:,.0f} s, a tape"
                    f" {detail['a_tape_s']:,.0f} s,"
                    f" last arrival {detail['last_arrival_service_s']:,.0f} s)"
                )
                print_bound = False
            rates[policy] = s["throughput_bytes_per_s"]
            medians[policy] = s["latency_s"]["p50"]
            print(
                f"{policy:>9} {s['makespan_s']:>11,.0f} {s['physical_bound_s']:>10,.0f}"
                f" {s['makespan_over_bound']:>8.3f} {rates[policy] / 1e6:>8.1f} {s['mounts']:>7,}"
                f" {s['files_per_mount']:>9.2f} {s['efficiency']:>7.3f} {medians[policy]:>9,.0f}"
                f" {s['latency_s']['p95']:>9,.0f} {took:>8.1f}"
            )
        if "carousel" in rates:
            for policy in policies:
                if policy != "carousel" and rates[policy]:
                    print(
                        f"carousel / {policy}: throughput {rates['carousel'] / rates[policy]:.2f}x,"
                        f" median latency {medians['carousel'] / medians[policy]:.2f}x"
                    )


if __name__ == "__main__":
    main()
