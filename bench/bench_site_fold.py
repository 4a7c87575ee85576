"""The snapshots of a site of two libraries on PostgreSQL: each library's store keeps its own copy of the tape
queues, and the site cycle's copies share each fold (carousel.db.demand_assembly.SiteAssemblies), against
the same copies without sharing (the baseline, in the same run: each library found the version moved by the
other's fold and read the whole table again).

    .venv/bin/python -m bench.bench_site_fold [--files 400000] [--tapes 20000] [--rounds 8] [--url ADMIN_URL]

A fresh database is created (the admin URL, default CAROUSEL_TEST_DATABASE_URL or
postgresql+psycopg://postgres@127.0.0.1:5432/postgres), filled server-side with `--files` queued files over
`--tapes` tape names in each of two libraries (east and west), folded, and dropped at the end. Each round
adds 20 files to each library (through the triggers, as intake does) and then takes both libraries'
snapshots in turn, as a site cycle does; the first round (both copies read whole) is not counted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

from sqlalchemy import make_url, text
from sqlalchemy.orm import Session, sessionmaker

from bench.bench_cycle import DEFAULT_ADMIN, NOW, drop_database, fresh_database
from carousel.db import queue_queries
from carousel.db.demand_assembly import DemandAssembly, SiteAssemblies
from carousel.db.engine import make_engine, make_session_factory, transaction
from carousel.db.tape_queue_queries import fold_deltas

LIBRARIES = ("east", "west")
ADDED_PER_LIBRARY = 20

FILL = text(
    """
    INSERT INTO files (path, state, library, tape, position_bytes, size_bytes, service_class, grp, priority,
                       attempts, queued_at, on_disk)
    SELECT '/bench/' || :tag || '/' || g, 'QUEUED', (ARRAY['east', 'west'])[1 + g % 2],
           'T' || lpad(((g / 2) % :tapes)::text, 6, '0'), g::bigint * 1000, 2000000000, 'default',
           (ARRAY['atlas', 'cms', 'lhcb'])[1 + g % 3], 0, 0, :now, false
    FROM generate_series(1, :files) AS g
    """
)


def fill(factory: sessionmaker[Session], tag: str, files: int, tapes: int) -> None:
    with transaction(factory) as session:
        session.execute(FILL, {"tag": tag, "files": files, "tapes": tapes, "now": NOW})


def snapshots(factory: sessionmaker[Session], tapes: int, rounds: int, shared: bool, tag: str) -> list[float]:
    """Seconds of both libraries' snapshots, a round each, the first round left out."""
    site = SiteAssemblies() if shared else None
    kept = {name: DemandAssembly(name, site) for name in LIBRARIES}
    seconds = []
    for round_number in range(rounds + 1):
        fill(factory, f"{tag}-{round_number}", 2 * ADDED_PER_LIBRARY, tapes)
        started = time.perf_counter()
        for name, assembly in kept.items():
            with transaction(factory) as session:
                queue_queries.read_demand(session, NOW, assembly, name)
        if round_number:
            seconds.append(time.perf_counter() - started)
    reloads = [assembly.reloads for assembly in kept.values()]
    print(f"  {'shared' if shared else 'apart '}: reloads of the whole table {reloads}", flush=True)
    return seconds


def _at_least_one(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number, e.g. 8") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1")
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=_at_least_one, default=400_000)
    parser.add_argument("--tapes", type=_at_least_one, default=20_000)
    parser.add_argument("--rounds", type=_at_least_one, default=8)
    parser.add_argument("--url", default=os.environ.get("CAROUSEL_TEST_DATABASE_URL", DEFAULT_ADMIN))
    args = parser.parse_args(argv)
    admin = make_url(args.url)
    name = f"carousel_bench_site_fold_{os.getpid()}"
    url = fresh_database(admin, name)
    try:
        factory = make_session_factory(make_engine(url))
        fill(factory, "fill", args.files, args.tapes)
        with transaction(factory) as session:
            while fold_deltas(session):
                pass
        print(
            f"{args.files:,} files on {args.tapes:,} tapes in each of {len(LIBRARIES)} libraries", flush=True
        )
        measured: dict[bool, list[float]] = {True: [], False: []}
        for turn, shared in enumerate(itertools.islice(itertools.cycle((False, True)), 4)):
            measured[shared] += snapshots(factory, args.tapes, args.rounds, shared, f"t{turn}")
        for shared, label in ((False, "apart (baseline)"), (True, "shared")):
            values = measured[shared]
            print(
                f"{label:>17}: both snapshots median {statistics.median(values) * 1000:,.1f} ms,"
                f" max {max(values) * 1000:,.1f} ms"
            )
        ratio = statistics.median(measured[False]) / statistics.median(measured[True])
        print(f"baseline / shared (median): {ratio:.2f}")
    finally:
        drop_database(admin, name)


if __name__ == "__main__":
    main()
