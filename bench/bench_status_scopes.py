"""What holding the Tape REST status to a token's poll scopes costs, against the same status for a token
that polls everything, measured in the same run on PostgreSQL.

A token whose poll scopes do not cover "/" gets each file outside them as an error instead of its state:
the document the database renders is parsed and rewritten in Python. This measures one render of a
10,000-file request's status (the use case, in one transaction, no HTTP and no status cache) for
`storage.poll:/` (the database's JSON passed through) and for `storage.poll:<one dataset>/` (rewritten).

Run: .venv/bin/python -m bench.bench_status_scopes  (PostgreSQL admin URL from CAROUSEL_BENCH_DATABASE_URL,
default postgresql+psycopg://postgres@127.0.0.1:5432/postgres; a throwaway database is created and dropped.)
"""

from __future__ import annotations

import argparse
import os
import posixpath
import statistics
import time

from sqlalchemy import create_engine, make_url, text

from bench.bench_intake import DEFAULT_ADMIN_URL, _library
from carousel.auth.scopes import grants_of, parse_scopes
from carousel.db.engine import make_engine, make_session_factory, transaction, upgrade_to_head
from carousel.domain.callers import ANONYMOUS, Caller
from carousel.domain.clock import SystemClock
from carousel.intake.model import Api, StageOrder
from carousel.intake.status import request_status_document
from carousel.intake.submit import submit


def _caller(scope: str) -> Caller:
    return Caller(ANONYMOUS.name, grants=grants_of(parse_scopes([scope]), ()))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()

    admin_url = make_url(os.environ.get("CAROUSEL_BENCH_DATABASE_URL", DEFAULT_ADMIN_URL))
    name = f"carousel_bench_scopes_{os.getpid()}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.set(database=name)
    try:
        upgrade_to_head(url)
        engine = make_engine(url)
        factory = make_session_factory(engine)
        adapter = _library(args.files)
        paths = list(adapter.library.catalogue)[: args.files]
        order = StageOrder(
            paths=tuple(paths), api=Api.TAPE_REST, list_field="files", path_field="files[{}].path"
        )
        with transaction(factory) as session:
            request_id = submit(
                session, adapter, SystemClock(), ANONYMOUS, order, max_files=args.files, max_path_bytes=4096
            ).request_id
        dataset = posixpath.dirname(posixpath.dirname(paths[0]))
        covered = sum(p.startswith(dataset + "/") for p in paths)
        callers = {
            "storage.poll:/": _caller("storage.poll:/"),
            f"storage.poll:{dataset}/": _caller(f"storage.poll:{dataset}/"),
        }
        times: dict[str, list[float]] = {scope: [] for scope in callers}
        for _ in range(args.trials):  # interleaved, so both see the same machine
            for scope, caller in callers.items():
                with transaction(factory) as session:
                    started = time.perf_counter()
                    request_status_document(session, caller, request_id)
                    times[scope].append(time.perf_counter() - started)
        print(
            f"status of a {args.files:,}-file request, {covered:,} of them under {dataset}/; "
            f"median of {args.trials}; load average {os.getloadavg()[0]:.1f}"
        )
        base = statistics.median(times["storage.poll:/"])
        for scope, samples in times.items():
            median = statistics.median(samples)
            print(f"  {scope:45s} {median * 1000:8.1f} ms   ratio to storage.poll:/ {median / base:5.2f}")
        engine.dispose()
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
