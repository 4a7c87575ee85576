"""One scheduling cycle over a big queue on PostgreSQL: 1,000,000 queued files over 20,000 tapes, against the
same cycle over 100,000 files on the same 20,000 tapes, measured in the same run (a cycle whose cost grows
with the tapes that have work, not with the files queued, takes about as long for both).

    .venv/bin/python -m bench.bench_cycle [--files 1000000] [--tapes 20000] [--drives 16] [--url ADMIN_URL]

A fresh database is created on the PostgreSQL server (the admin URL, default CAROUSEL_TEST_DATABASE_URL or
postgresql+psycopg://postgres@127.0.0.1:5432/postgres), migrated, filled server-side (INSERT ... SELECT FROM
generate_series, so the queue costs this process nothing) and dropped at the end. Each size is timed best of
five cycles, each cycle being what the service's planning path does (carousel.scheduler.planning_path): the
per-tape snapshot over the database store (demand and fair share usage), the `carousel` policy with LTO-9
costs, the cut to the cycle's budget, the claim (FOR UPDATE SKIP LOCKED) and the hand-over record. The
library's own time to accept the batches is left out: it belongs to the HSM, not to carousel. Memory: the
Python heap's peak during a cycle (tracemalloc) and the process's peak resident size.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import time
import tracemalloc
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

from carousel.db.engine import make_engine, make_session_factory, upgrade_to_head
from carousel.domain.planning import LibraryView, Snapshot
from carousel.domain.queue import HandedOver
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


@dataclass(frozen=True, slots=True)
class CycleTimes:
    files: int
    tapes: int
    snapshot_s: float
    plan_s: float
    claim_s: float
    cycle_s: float
    claimed: int
    heap_peak_mb: float


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


def measure(admin: URL, files: int, tapes: int, drives: int, repeats: int) -> CycleTimes:
    name = f"carousel_bench_cycle_{os.getpid()}_{files}"
    url = fresh_database(admin, name)
    try:
        engine = make_engine(url)
        with engine.begin() as connection:
            connection.execute(FILL, {"tapes": tapes, "files": files, "now": NOW})
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE files"))
        store = DatabaseQueueStore(make_session_factory(engine))
        policy = build_policy("carousel", {})
        costs = library_costs(TapePhysics(load_profile("lto9")))
        counter = itertools.count()
        best: CycleTimes | None = None
        for repeat in range(repeats + 1):
            # the last run measures the heap (tracemalloc slows Python down: it is not timed)
            measuring_heap = repeat == repeats
            if measuring_heap:
                tracemalloc.start()
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
            plan = policy.plan(snapshot)
            plan_done = time.perf_counter()
            claims = store.claim(plan.selections, lambda: f"k{next(counter)}", NOW)
            accepted = [
                HandedOver(batch.key, batch.tape, ids)
                for selection, key, claimed in claims
                for batch, ids in batches_of(selection, claimed, key)
            ]
            store.handed_over(accepted, [], NOW)
            finished = time.perf_counter()
            # put the claimed files back, so every cycle finds free drives and claims again
            with engine.begin() as connection:
                connection.execute(RESET)
            if measuring_heap:
                _, heap_peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                assert best is not None
                best = replace(best, heap_peak_mb=heap_peak / 2**20)
                continue
            times = CycleTimes(
                files=files,
                tapes=len(demand.tapes),
                snapshot_s=snapshot_done - started,
                plan_s=plan_done - snapshot_done,
                claim_s=finished - plan_done,
                cycle_s=finished - started,
                claimed=sum(len(c) for _, _, c in claims),
                heap_peak_mb=0.0,
            )
            if best is None or times.cycle_s < best.cycle_s:
                best = times
        engine.dispose()
        assert best is not None
        return best
    finally:
        drop_database(admin, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--tapes", type=int, default=20_000)
    parser.add_argument("--drives", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--url", default=os.environ.get("CAROUSEL_TEST_DATABASE_URL", DEFAULT_ADMIN))
    args = parser.parse_args()
    admin = make_url(args.url)
    small = measure(admin, args.files // 10, args.tapes, args.drives, args.repeats)
    big = measure(admin, args.files, args.tapes, args.drives, args.repeats)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{'queued files':>14} {'tapes':>7} {'snapshot s':>11} {'plan s':>8} {'claim s':>8} {'cycle s':>8}"
        f" {'claimed':>8} {'heap MB':>8}"
    )
    for t in (small, big):
        print(
            f"{t.files:>14,} {t.tapes:>7,} {t.snapshot_s:>11.3f} {t.plan_s:>8.3f} {t.claim_s:>8.3f} "
            f"{t.cycle_s:>8.3f} {t.claimed:>8,} {t.heap_peak_mb:>8.1f}"
        )
    print(f"cycle time, {big.files:,} files against {small.files:,}: {big.cycle_s / small.cycle_s:.2f}x")
    print(f"peak resident size of this process: {rss_mb:.0f} MB")
    print(f"under 1 s: {'yes' if big.cycle_s < 1 else 'NO'}; under 500 MB: {'yes' if rss_mb < 500 else 'NO'}")


if __name__ == "__main__":
    main()
