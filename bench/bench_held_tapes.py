"""What tapes held back by admins cost a scheduling cycle on PostgreSQL: the cycle of bench_cycle (1,000,000
queued files over 20,000 tapes) with no tape state recorded, before and after the same cycle with a tenth of
the tapes disabled, in the same database and the same run (the snapshot then reads `tape_states` and leaves
those tapes out; every claim refuses files of held tapes by a NOT EXISTS over `tape_states`, matching the
file's library and tape; the tapes are all the library `default`'s).

    .venv/bin/python -m bench.bench_held_tapes [--files 1000000] [--tapes 20000] [--held 2000] [--url URL]

Each case is timed best of `--repeats` cycles: the cycle's tape and drive step (carousel.scheduler.
media_states: files of held tapes to take back from the library, queued files of broken tapes, drive states),
snapshot (demand through the database store), the `carousel` policy with LTO-9 costs, the claim and the
hand-over record; claimed files are put back after each cycle. The run checks that no file of a held tape is
claimed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from sqlalchemy import Engine, make_url, text

from bench.bench_cycle import DEFAULT_ADMIN, FILL, NOW, RESET, drop_database, fresh_database
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.tape_queue_queries import fold_deltas
from carousel.domain.clock import ManualClock
from carousel.domain.media import hold_back
from carousel.domain.planning import LibraryView, Snapshot
from carousel.domain.queue import HandedOver
from carousel.scheduler.media_states import MediaStates
from carousel.scheduler.planning_path import batches_of
from carousel.scheduler.queue_store import DatabaseQueueStore
from hsm_adapters.base import HsmAdapter
from hsm_adapters.simulated.costs import library_costs
from hsm_adapters.simulated.physics import TapePhysics
from hsm_adapters.simulated.profiles import load_profile
from policies.registry import build_policy

# every tenth tape (by number) disabled, as an admin would disable tapes one by one
HOLD = text(
    "INSERT INTO tape_states (tape, state, reason, changed_at, changed_by, failed_mounts)"
    " SELECT 'T' || lpad(g::text, 6, '0'), 'disabled', 'bench', :now, 'bench', 0"
    " FROM generate_series(0, :tapes - 1, :every) AS g LIMIT :held"
)


@dataclass(frozen=True, slots=True)
class Times:
    held: int
    tapes_planned: int
    media_s: float
    snapshot_s: float
    plan_s: float
    claim_s: float
    cycle_s: float
    claimed: int


def best_cycle(engine: Engine, drives: int, repeats: int, held: set[str]) -> Times:
    store = DatabaseQueueStore(make_session_factory(engine))
    # the intake's deltas folded first, as a running service's cycles fold them (a fold takes at most
    # FOLD_LIMIT): every tape with files is in the snapshot, the held ones too
    with transaction(make_session_factory(engine)) as session:
        while fold_deltas(session):
            pass
    policy = build_policy("carousel", {})
    costs = library_costs(TapePhysics(load_profile("lto9")))
    counter = itertools.count()
    # no library: nothing of a held tape is with one here (claims are put back), and no drive is set
    media = MediaStates(
        make_session_factory(engine),
        cast(HsmAdapter, object()),
        ManualClock(NOW),
        break_after_failed_mounts=3,
    )
    best: Times | None = None
    for _ in range(repeats):
        started = time.perf_counter()
        media.run()
        media_done = time.perf_counter()
        demand = store.demand(NOW)
        snapshot_done = time.perf_counter()
        snapshot = Snapshot(
            now=NOW,
            tapes=demand.tapes,
            library=LibraryView(True, drives, drives, costs=costs),
            in_flight=demand.in_flight,
            in_flight_tapes=demand.in_flight_tapes,
            usage=demand.usage,
            held=demand.held,
        )
        plan = hold_back(policy.plan(snapshot), snapshot.held)
        plan_done = time.perf_counter()
        claims = store.claim(plan.selections, lambda: f"k{next(counter)}", NOW)
        accepted = [
            HandedOver(batch.key, batch.tape, ids)
            for selection, key, claimed in claims
            for batch, ids in batches_of(selection, claimed, key)
        ]
        store.handed_over(accepted, [], NOW)
        finished = time.perf_counter()
        claimed_tapes = {f.tape for _, _, files in claims for f in files}
        assert not claimed_tapes & held, "a file of a held tape was claimed"
        assert held <= set(plan.waiting), "a held tape is not named waiting"
        with engine.begin() as connection:
            connection.execute(RESET)
        times = Times(
            held=len(held),
            tapes_planned=len(demand.tapes),
            media_s=media_done - started,
            snapshot_s=snapshot_done - media_done,
            plan_s=plan_done - snapshot_done,
            claim_s=finished - plan_done,
            cycle_s=finished - started,
            claimed=sum(len(files) for _, _, files in claims),
        )
        if best is None or times.cycle_s < best.cycle_s:
            best = times
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--tapes", type=int, default=20_000)
    parser.add_argument("--held", type=int, default=2_000)
    parser.add_argument("--drives", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--url", default=os.environ.get("CAROUSEL_TEST_DATABASE_URL", DEFAULT_ADMIN))
    args = parser.parse_args()
    admin = make_url(args.url)
    name = f"carousel_bench_held_{os.getpid()}"
    url = fresh_database(admin, name)
    try:
        engine = make_engine(url)
        with engine.begin() as connection:
            connection.execute(FILL, {"tapes": args.tapes, "files": args.files, "now": NOW})
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE files"))
        baseline = best_cycle(engine, args.drives, args.repeats, set())
        every = max(1, args.tapes // max(1, args.held))
        with engine.begin() as connection:
            connection.execute(
                HOLD, {"now": datetime.now(UTC), "tapes": args.tapes, "every": every, "held": args.held}
            )
            held = set(connection.execute(text("SELECT tape FROM tape_states")).scalars())
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM ANALYZE tape_states"))
        holding = best_cycle(engine, args.drives, args.repeats, held)
        # the baseline again, after: whichever runs later does not get the better (or worse) machine alone
        with engine.begin() as connection:
            connection.execute(text("DELETE FROM tape_states"))
        after = best_cycle(engine, args.drives, args.repeats, set())
        engine.dispose()
    finally:
        drop_database(admin, name)
    print(
        f"{args.files:,} queued files over {args.tapes:,} tapes, {args.drives} drives, best of {args.repeats}"
    )
    print(
        f"{'held tapes':>10} {'planned':>8} {'media s':>8} {'snapshot s':>11} {'plan s':>8} {'claim s':>8}"
        f" {'cycle s':>8}"
        f" {'claimed':>8}"
    )
    for t in (baseline, holding, after):
        print(
            f"{t.held:>10,} {t.tapes_planned:>8,} {t.media_s:>8.3f} {t.snapshot_s:>11.3f} {t.plan_s:>8.3f}"
            f" {t.claim_s:>8.3f}"
            f" {t.cycle_s:>8.3f} {t.claimed:>8,}"
        )
    print(
        f"cycle time with {holding.held:,} tapes held against none (the mean of before and after):"
        f" {holding.cycle_s / ((baseline.cycle_s + after.cycle_s) / 2):.2f}x"
    )


if __name__ == "__main__":
    main()
