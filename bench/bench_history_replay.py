"""Replay of a day of recorded requests under a candidate policy (carousel.policy_admin.history_replay).

    .venv/bin/python -m bench.bench_history_replay [--files 10000] [--tapes 1000] [--url DATABASE_URL]

A day of history is written straight into a fresh database (a temporary SQLite file, or the empty database
--url names, migrated first): requests of 100 files each, arriving evenly over the day, every file read once
(a recall ending on disk). Then, each timed best of three:

- the replay as the admin API runs it: the window read from the database, the trace built, the policy
  replayed through the simulator (candidate = active, so one replay), the figures summed;
- the baseline: the bare simulator replaying the same trace (`carousel.replay.driver.replay`), the cost
  any replay has. The ratio is what reading the history and summing the figures adds to it.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from carousel.config import Settings
from carousel.db.engine import make_engine, make_session_factory, transaction, upgrade_to_head
from carousel.db.history_queries import asked_files
from carousel.db.models import QueuedFileRow, Recall, RequestFile, StageRequest
from carousel.domain.clock import ManualClock
from carousel.domain.policy_choice import PolicyChoice
from carousel.domain.states import LinkState
from carousel.policy_admin.history_replay import history_trace, replay_history
from carousel.replay.driver import ReplayConfig, replay

NOW = datetime(2026, 3, 2, tzinfo=UTC)
LIBRARY = {"profile": "lto8", "drives": 8, "scale": 1.0}
POLICY = PolicyChoice("carousel", {})


def write_history(url: str, files: int, tapes: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    start = NOW - timedelta(hours=23)
    requests: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    recalls: list[dict[str, Any]] = []
    per_request = 100
    count = max(files // per_request, 1)
    written: dict[str, int] = {}  # tape -> bytes written so far: files lie one after another
    for r in range(count):
        created = start + timedelta(seconds=r * 22 * 3600 / count)
        request_id = f"00000000-0000-4000-8000-{r:012d}"
        requests.append(
            {
                "id": request_id,
                "owner": "bench",
                "grp": "default",
                "activity": "default",
                "priority": 0,
                "api": "native",
                "state": "DONE",
                "files_total": per_request,
                "created_at": created,
            }
        )
        for n in range(per_request):
            file_id = len(rows) + 1
            tape = f"T{rng.randrange(tapes):05d}"
            size = int(rng.lognormvariate(21, 1.0)) + 1
            finished = created + timedelta(seconds=rng.uniform(60, 3600))
            position = written.get(tape, 0)
            written[tape] = position + size
            rows.append(
                {
                    "id": file_id,
                    "path": f"/bench/{tape}/{file_id}",
                    "state": "STAGED",
                    "tape": tape,
                    "position_bytes": position,
                    "size_bytes": size,
                    "queued_at": created,
                    "finished_at": finished,
                    "on_disk": True,
                }
            )
            links.append(
                {
                    "request_id": request_id,
                    "ordinal": n,
                    "file_id": file_id,
                    "path": f"/bench/{tape}/{file_id}",
                    "state": LinkState.COMPLETED.value,
                    "finished_at": finished,
                }
            )
            recalls.append(
                {
                    "file_id": file_id,
                    "batch_key": f"b{file_id}",
                    "tape": tape,
                    "submitted_at": created + timedelta(seconds=2),
                    "finished_at": finished,
                    "outcome": "STAGED",
                    "bytes": size,
                }
            )
    upgrade_to_head(url)
    engine = make_engine(Settings(database_url=url))
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        session.execute(insert(StageRequest), requests)
        session.execute(insert(QueuedFileRow), rows)
        session.execute(insert(RequestFile), links)
        session.execute(insert(Recall), recalls)
    engine.dispose()


def best_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--tapes", type=int, default=1_000)
    parser.add_argument("--url", default=None, help="an empty database (default: a temporary SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        url = args.url or f"sqlite:///{Path(folder) / 'history.sqlite3'}"
        write_history(url, args.files, args.tapes)
        settings = Settings(database_url=url, adapter_options=LIBRARY)
        engine = make_engine(settings)
        factory = make_session_factory(engine)
        clock = ManualClock(NOW)
        with transaction(factory) as session:
            trace = history_trace(asked_files(session, NOW - timedelta(hours=24), NOW, limit=args.files + 1))
        config = ReplayConfig(profile="lto8", drives=8, policy=POLICY.policy, cycle_interval_s=2.0)

        def from_history() -> object:
            return replay_history(factory, settings, clock, candidate=POLICY, active=POLICY)

        done = replay_history(factory, settings, clock, candidate=POLICY, active=POLICY)
        bare = best_of(3, lambda: replay(trace, config))
        full = best_of(3, from_history)
        engine.dispose()
    print(
        f"{done.recorded.files} files of {done.requests} requests over {args.tapes} tapes,"
        f" {url.split(':')[0]}"
    )
    print(f"  replayed: {done.under_active.staged} staged, {done.under_active.mounts} mounts")
    print(f"  bare simulator replay (baseline): {bare:.2f} s ({len(trace.rows) / bare:,.0f} files/s)")
    print(f"  history replay (admin API):       {full:.2f} s ({done.recorded.files / full:,.0f} files/s)")
    print(f"  ratio history / bare: {full / bare:.2f}")


if __name__ == "__main__":
    main()
