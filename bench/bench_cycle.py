"""Scheduling cycles over a big queue on PostgreSQL: 1,000,000 queued files over 20,000 tapes, against the
same cycles over 100,000 files on the same 20,000 tapes, measured in the same run (a cycle whose cost grows
with the tapes that have work, not with the files queued, takes about as long for both).

    .venv/bin/python -m bench.bench_cycle [--files 1000000] [--tapes 20000] [--drives 16] [--cycles 12]
                                          [--url ADMIN_URL]

A fresh database is created on the PostgreSQL server (the admin URL, default CAROUSEL_TEST_DATABASE_URL or
postgresql+psycopg://postgres@127.0.0.1:5432/postgres), migrated, filled server-side (INSERT ... SELECT FROM
generate_series, through the triggers as intake's inserts are) and dropped at the end. Nothing is done to the
database between the fill and the first cycle, as in the service: the first cycle meets the queue as intake
left it. Each size runs `--cycles` cycles in a row, each what the service's planning path does
(carousel.scheduler.planning_path): the per-tape snapshot over the database store (demand and fair share
usage), the `carousel` policy with LTO-9 costs, the claim (FOR UPDATE SKIP LOCKED) and the hand-over record.
Between cycles (untimed) the claimed files go back to the queue, so every cycle finds free drives and claims
again. Every cycle is printed, then the median and the maximum, with the phases of the slowest cycle (the
snapshot holds the fold of the tape-queue deltas, the read of the whole tape-queue table when the store's
copy of it is stale, the demand objects and the fair share usage; "gc" is Python's garbage collector, inside
whichever phase it struck). The library's own time to accept the batches is left out: it belongs to the HSM,
not to carousel. Memory: the Python heap's peak during one more cycle (tracemalloc) and the process's peak
resident size.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import resource
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

from carousel.db import queue_queries
from carousel.db.demand_assembly import DemandAssembly
from carousel.db.engine import make_engine, make_session_factory, upgrade_to_head
from carousel.db.usage_queries import GroupUsageLedger
from carousel.domain.planning import LibraryView, Snapshot
from carousel.domain.queue import HandedOver
from carousel.scheduler.collector import collector_held
from carousel.scheduler.planning_path import batches_of
from carousel.scheduler.queue_store import DatabaseQueueStore
from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile
from policies.registry import build_policy

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DEFAULT_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"

FILL = text(
    """
    INSERT INTO files (path, state, tape, position_bytes, size_bytes, service_class, grp, priority, attempts,
                       queued_at, on_disk)
    SELECT '/bench/' || (g % :tapes) || '/' || g, 'QUEUED', 'T' || lpad((g % :tapes)::text, 6, '0'),
           (g / :tapes)::bigint * 3000000000, 2000000000, 'default',
           (ARRAY['atlas', 'cms', 'lhcb'])[1 + g % 3], (g % 7 = 0)::int, 0,
           :now - make_interval(secs => (g % 86400)), false
    FROM generate_series(1, :files) AS g
    """
)

RESET = text(
    "DELETE FROM recalls;"
    " UPDATE files SET state = 'QUEUED', batch_key = NULL, claimed_at = NULL, submitted_at = NULL"
    " WHERE state <> 'QUEUED'"
)

# Inner steps timed on their own (module, function, phase): wrapped for the benchmark's run only.
INNER_STEPS: tuple[tuple[Any, str, str], ...] = (
    (queue_queries, "fold", "fold"),
    (queue_queries, "_every_queue_row", "table read"),
    (DemandAssembly, "assemble", "demand objects"),
    (GroupUsageLedger, "__call__", "usage"),
)
PHASES = ("snapshot", "fold", "table read", "demand objects", "usage", "plan", "claim", "record", "gc")


@dataclass(slots=True)
class Cycle:
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    claimed: int = 0

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds


@dataclass(frozen=True, slots=True)
class Size:
    files: int
    tapes: int
    fill_s: float
    cycles: list[Cycle]
    heap_peak_mb: float

    @property
    def median_s(self) -> float:
        return statistics.median(c.seconds for c in self.cycles)

    @property
    def worst(self) -> Cycle:
        return max(self.cycles, key=lambda c: c.seconds)


class Timer:
    """Times the inner steps (INNER_STEPS) into the cycle being measured."""

    def __init__(self) -> None:
        self.current: Cycle | None = None
        self.collecting = 0.0

    @contextmanager
    def installed(self) -> Iterator[None]:
        originals = [(module, name, getattr(module, name)) for module, name, _ in INNER_STEPS]
        for (module, name, phase), (_, _, original) in zip(INNER_STEPS, originals, strict=True):
            setattr(module, name, self._timed(original, phase))
        gc.callbacks.append(self._collection)
        try:
            yield
        finally:
            gc.callbacks.remove(self._collection)
            for module, name, original in originals:
                setattr(module, name, original)

    def _collection(self, event: str, info: dict[str, int]) -> None:
        """Python's garbage collector pausing the cycle (phase "gc", inside whichever phase it struck)."""
        if event == "start":
            self.collecting = time.perf_counter()
        elif self.current is not None:
            self.current.add("gc", time.perf_counter() - self.collecting)

    def _timed(self, function: Callable[..., Any], phase: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                if self.current is not None:
                    self.current.add(phase, time.perf_counter() - started)

        return timed


def fresh_database(admin: URL, name: str) -> URL:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    url = admin.set(database=name)
    upgrade_to_head(url)
    return url


def drop_database(admin: URL, name: str) -> None:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    engine.dispose()


def measure(admin: URL, files: int, tapes: int, drives: int, cycles: int, timer: Timer) -> Size:
    name = f"carousel_bench_cycle_{os.getpid()}_{files}"
    url = fresh_database(admin, name)
    try:
        engine = make_engine(url)
        started = time.perf_counter()
        with engine.begin() as connection:
            connection.execute(FILL, {"tapes": tapes, "files": files, "now": NOW})
        fill_s = time.perf_counter() - started
        store = DatabaseQueueStore(make_session_factory(engine))
        policy = build_policy("carousel", {})
        costs = library_costs(TapePhysics(load_profile("lto9")))
        counter = itertools.count()
        measured: list[Cycle] = []
        heap_peak = 0
        for repeat in range(cycles + 1):
            # the last run measures the heap (tracemalloc slows Python down: it is not counted)
            measuring_heap = repeat == cycles
            if measuring_heap:
                tracemalloc.start()
            cycle = timer.current = Cycle()
            started = time.perf_counter()
            demand = store.demand(NOW)
            snapshot_done = time.perf_counter()
            snapshot = Snapshot(
                now=NOW,
                tapes=demand.tapes,
                library=LibraryView(True, drives, drives, costs=costs),
                in_flight=demand.in_flight,
                in_flight_tapes=demand.in_flight_tapes,
                usage=demand.usage,
            )
            with collector_held():  # as the planning path does
                plan = policy.plan(snapshot)
            plan_done = time.perf_counter()
            claims = store.claim(plan.selections, lambda: f"k{next(counter)}", NOW)
            claim_done = time.perf_counter()
            accepted = [
                HandedOver(batch.key, batch.tape, ids)
                for selection, key, claimed in claims
                for batch, ids in batches_of(selection, claimed, key)
            ]
            store.handed_over(accepted, [], NOW)
            finished = time.perf_counter()
            timer.current = None
            cycle.seconds = finished - started
            cycle.add("snapshot", snapshot_done - started)
            cycle.add("plan", plan_done - snapshot_done)
            cycle.add("claim", claim_done - plan_done)
            cycle.add("record", finished - claim_done)
            cycle.claimed = sum(len(c) for _, _, c in claims)
            # put the claimed files back, so every cycle finds free drives and claims again
            with engine.begin() as connection:
                connection.execute(RESET)
            if measuring_heap:
                _, heap_peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
            else:
                measured.append(cycle)
        engine.dispose()
        return Size(files, tapes, fill_s, measured, heap_peak / 2**20)
    finally:
        drop_database(admin, name)


def phases_line(cycle: Cycle) -> str:
    return "  ".join(f"{phase} {cycle.phases[phase]:.3f}" for phase in PHASES if phase in cycle.phases)


def report(size: Size) -> None:
    print(f"{size.files:,} queued files on {size.tapes:,} tapes (filled in {size.fill_s:.1f} s):")
    print(f"  {'cycle':>5} {'seconds':>8} {'claimed':>8}  phases (s)")
    for n, cycle in enumerate(size.cycles, 1):
        print(f"  {n:>5} {cycle.seconds:>8.3f} {cycle.claimed:>8,}  {phases_line(cycle)}")
    worst = size.worst
    print(
        f"  median {size.median_s:.3f} s, maximum {worst.seconds:.3f} s (cycle"
        f" {size.cycles.index(worst) + 1}: {phases_line(worst)}); Python heap peak {size.heap_peak_mb:.1f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--tapes", type=int, default=20_000)
    parser.add_argument("--drives", type=int, default=16)
    parser.add_argument("--cycles", type=int, default=12)
    parser.add_argument("--goal", type=float, default=1.0, help="every cycle at --files under this, seconds")
    parser.add_argument("--url", default=os.environ.get("CAROUSEL_TEST_DATABASE_URL", DEFAULT_ADMIN))
    args = parser.parse_args()
    admin = make_url(args.url)
    timer = Timer()
    with timer.installed():
        small = measure(admin, args.files // 10, args.tapes, args.drives, args.cycles, timer)
        report(small)
        big = measure(admin, args.files, args.tapes, args.drives, args.cycles, timer)
        report(big)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    median_ratio = big.median_s / small.median_s
    print(
        f"cycle time, {big.files:,} files against {small.files:,}: median {median_ratio:.2f}x,"
        f" maximum {big.worst.seconds / small.worst.seconds:.2f}x"
    )
    print(f"peak resident size of this process: {rss_mb:.0f} MB")
    held = "yes" if big.worst.seconds < args.goal else "NO"
    print(
        f"every cycle at {big.files:,} files under {args.goal:g} s: {held}"
        f" (median {big.median_s:.3f} s, maximum {big.worst.seconds:.3f} s)"
    )


if __name__ == "__main__":
    main()
